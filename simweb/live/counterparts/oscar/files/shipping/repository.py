"""Simshop's shipping methods, as the simweb shop offers them.

Oscar ships only "Free shipping"; a real shop declares its own methods in a forked
shipping repository. These are simweb's three (apps/shopping/world.py SHIPPING_METHODS):
standard ($5.99, free from a $50 basket), express ($14.99), overnight ($29.99).
"""
from decimal import Decimal

from oscar.apps.shipping import methods
from oscar.apps.shipping.repository import Repository as CoreRepository
from oscar.core import prices


class ShopMethod(methods.Base):
    """A fixed charge, free from ``free_over`` (dollars) of basket total when given."""

    def __init__(self, code: str, name: str, charge: str, days: str, free_over: str | None = None):
        self.code, self.name, self.description = code, name, days
        self.charge, self.free_over = Decimal(charge), None if free_over is None else Decimal(free_over)

    def calculate(self, basket):
        free = self.free_over is not None and basket.total_incl_tax >= self.free_over
        charge = Decimal("0.00") if free else self.charge
        return prices.Price(currency=basket.currency, excl_tax=charge, incl_tax=charge)


class Repository(CoreRepository):
    methods = (ShopMethod("standard", "Standard shipping", "5.99", "5-7 days", free_over="50.00"),
               ShopMethod("express", "Express shipping", "14.99", "2-3 days"),
               ShopMethod("overnight", "Overnight shipping", "29.99", "1 day"))
