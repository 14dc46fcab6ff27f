"""Oscar's shipping app, forked only for its repository (the shop's shipping methods)."""
import oscar.apps.shipping.apps as apps


class ShippingConfig(apps.ShippingConfig):
    name = "simshop.shipping"
