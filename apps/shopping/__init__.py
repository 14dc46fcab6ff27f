"""Simshop: a complete small online shop (search, filters, product options, cart,
coupons, multi-step checkout, orders with cancel/return, wishlist, reviews, accounts)."""
from simweb.runtime.definition import AppDefinition, AppLimits

APP = AppDefinition(
    name="shopping",
    title="Simshop",
    package="simweb.apps.shopping",
    world="simweb.apps.shopping.world:ShopWorld",
    functions="simweb.apps.shopping.functions:FUNCTIONS",
    tasks="simweb.apps.shopping.tasks:TASKS",
    verifiers="simweb.verifiers.shopping",
    default_size=10_000,
    description="An online shop with 10,000 products (scales to 1,000,000).",
    # at least 30% of the templates medium or hard (WebGym's fact-count buckets)
    limits=AppLimits(min_hard_share=0.30),
)
