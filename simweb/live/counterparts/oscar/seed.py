"""Seed the Oscar counterpart from a simweb payload (runs in the counterpart's own venv).

Usage: ``python seed.py PAYLOAD.json`` with the working directory at the counterpart
home (``project/`` holds the Django project) and ``SIMWEB_OSCAR_HOME`` set.

Every entity is created through Oscar's own models, the way a shop's import script
would: categories through Oscar's breadcrumb helper, products with a stock record per
product (price and stock), size and color as Oscar product options (select type, one
option group per product so each product offers only its own values), customers as
Django users (email login), their saved addresses, and their past orders with lines and
a shipping address. The payload's simweb ids become Oscar keys where Oscar lets us choose
them (product UPC = simweb SKU, order number = simweb order id), so the live verifiers
can find the task's entities without guessing.
"""
from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any


def money(cents: int) -> Decimal:
    return (Decimal(cents) / 100).quantize(Decimal("0.01"))


def main(payload_file: str) -> None:
    home = Path(os.environ.get("SIMWEB_OSCAR_HOME") or Path.cwd())
    sys.path.insert(0, str(home / "project"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "simshop.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.sites.models import Site
    from django.db import transaction
    from oscar.apps.catalogue.categories import create_from_breadcrumbs
    from oscar.core.loading import get_model

    payload = json.loads(Path(payload_file).read_text())
    Partner = get_model("partner", "Partner")
    StockRecord = get_model("partner", "StockRecord")
    ProductClass = get_model("catalogue", "ProductClass")
    Product = get_model("catalogue", "Product")
    ProductCategory = get_model("catalogue", "ProductCategory")
    Option = get_model("catalogue", "Option")
    AttributeOptionGroup = get_model("catalogue", "AttributeOptionGroup")
    AttributeOption = get_model("catalogue", "AttributeOption")
    Country = get_model("address", "Country")
    UserAddress = get_model("address", "UserAddress")
    Order = get_model("order", "Order")
    Line = get_model("order", "Line")
    LineAttribute = get_model("order", "LineAttribute")
    ShippingAddress = get_model("order", "ShippingAddress")
    User = get_user_model()

    with transaction.atomic():
        site = Site.objects.get(pk=1)
        site.domain, site.name = payload.get("domain", "127.0.0.1"), "Simshop"
        site.save()
        us, _ = Country.objects.get_or_create(
            iso_3166_1_a2="US", defaults={"iso_3166_1_a3": "USA", "iso_3166_1_numeric": "840",
                                          "printable_name": "United States", "name": "United States of America",
                                          "is_shipping_country": True})
        partner, _ = Partner.objects.get_or_create(name="Simshop")
        goods, _ = ProductClass.objects.get_or_create(name="Goods", defaults={"requires_shipping": True,
                                                                             "track_stock": True})
        products: dict[int, Any] = {}   # Django model instances (untyped)
        records: dict[int, Any] = {}
        for p in payload["products"]:
            prod = Product.objects.create(title=p["name"], upc=p["sku"], product_class=goods,
                                          structure=Product.STANDALONE, description=p["description"],
                                          is_public=True)
            ProductCategory.objects.create(product=prod,
                                           category=create_from_breadcrumbs(f"{p['department']} > {p['category']}"))
            records[p["id"]] = StockRecord.objects.create(product=prod, partner=partner, partner_sku=p["sku"],
                                                          price_currency="USD", price=money(p["price_cents"]),
                                                          num_in_stock=p["stock"])
            for kind in ("size", "color"):
                values = p["options"].get(kind) or []
                if not values:
                    continue
                group = AttributeOptionGroup.objects.create(name=f"{kind}-{p['id']}")
                for v in values:
                    AttributeOption.objects.create(group=group, option=v)
                opt = Option.objects.create(name=kind.capitalize(), code=f"{kind}-{p['id']}", type=Option.SELECT,
                                            required=True, option_group=group, order=0 if kind == "size" else 1)
                prod.product_options.add(opt)
            products[p["id"]] = prod

        users: dict[int, object] = {}
        for u in payload["users"]:
            first, _, last = u["full_name"].partition(" ")
            users[u["id"]] = User.objects.create_user(username=u["username"], email=u["email"],
                                                      password=payload["password"], first_name=first,
                                                      last_name=last)
        for a in payload["addresses"]:
            first, _, last = a["full_name"].partition(" ")
            UserAddress.objects.create(user=users[a["user_id"]], first_name=first, last_name=last,
                                       line1=a["street"], line4=a["city"], state=a["state"], postcode=a["zip"],
                                       country=us, phone_number=a.get("phone") or "",
                                       is_default_for_shipping=a["is_default"], is_default_for_billing=a["is_default"])

        for o in payload["orders"]:
            a = o["address"]
            first, _, last = a["full_name"].partition(" ")
            ship = ShippingAddress.objects.create(first_name=first, last_name=last, line1=a["street"],
                                                  line4=a["city"], state=a["state"], postcode=a["zip"], country=us)
            order = Order.objects.create(
                number=str(o["id"]), site=site, user=users[o["user_id"]], currency="USD",
                total_incl_tax=money(o["total_cents"]), total_excl_tax=money(o["total_cents"]),
                shipping_incl_tax=money(o["shipping_cents"]), shipping_excl_tax=money(o["shipping_cents"]),
                shipping_method=o["shipping_method"].capitalize(), shipping_code=o["shipping_method"],
                shipping_address=ship, status=o["status"].replace("_", " ").capitalize(),
                date_placed=datetime.fromisoformat(o["date"]).replace(tzinfo=UTC))
            for it in o["items"]:
                prod = products.get(it["product_id"])
                price = money(it["price_cents"])
                line = Line.objects.create(
                    order=order, partner=partner, partner_name="Simshop",
                    partner_sku=prod.upc if prod else "", stockrecord=records.get(it["product_id"]),
                    product=prod, title=it["name"], upc=prod.upc if prod else "", quantity=it["qty"],
                    line_price_incl_tax=price * it["qty"], line_price_excl_tax=price * it["qty"],
                    line_price_before_discounts_incl_tax=price * it["qty"],
                    line_price_before_discounts_excl_tax=price * it["qty"],
                    unit_price_incl_tax=price, unit_price_excl_tax=price, status=order.status,
                    num_allocated=0)
                for kind, value in sorted((it.get("options") or {}).items()):
                    LineAttribute.objects.create(line=line, type=kind.capitalize(), value=value)
    print(f"seeded {len(products)} products, {len(users)} users, {len(payload['orders'])} orders")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: seed.py PAYLOAD.json")
    main(sys.argv[1])
