"""Settings of the Oscar shop simweb runs as the live counterpart of its shopping app.

A minimal django-oscar 4.2 project: SQLite and the Whoosh search index under the
counterpart home's ``data/``, DEBUG off, loopback hosts only, no outgoing mail (the
locmem backend keeps messages in memory), static files served by the development
server (``runserver --insecure``), prices in US dollars without tax.

The counterpart home is passed in ``SIMWEB_OSCAR_HOME`` (set by the counterpart's
server environment and by every management command it runs).
"""
import os
from pathlib import Path

from oscar.defaults import *  # noqa: F401,F403  (Oscar's documented way to get its defaults)

HOME = Path(os.environ["SIMWEB_OSCAR_HOME"])
DATA = HOME / "data"

SECRET_KEY = "simweb-oscar-loopback-only"        # a loopback test shop: a fixed key keeps sessions reproducible
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "simshop.urls"
WSGI_APPLICATION = None
SITE_ID = 1
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
LANGUAGES = [("en-us", "English")]   # one language: no language picker in the header
USE_I18N = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
MIGRATION_MODULES = {"shipping": "oscar.apps.shipping.migrations"}   # the fork keeps Oscar's models

DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(DATA / "db.sqlite3"),
                         "OPTIONS": {"timeout": 20}}}
HAYSTACK_CONNECTIONS = {"default": {"ENGINE": "haystack.backends.whoosh_backend.WhooshEngine",
                                    "PATH": str(DATA / "whoosh_index")}}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

INSTALLED_APPS = [
    "django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
    "django.contrib.messages", "django.contrib.staticfiles", "django.contrib.sites", "django.contrib.flatpages",
    "oscar.config.Shop",
    "oscar.apps.analytics.apps.AnalyticsConfig",
    "oscar.apps.checkout.apps.CheckoutConfig",
    "oscar.apps.address.apps.AddressConfig",
    "simshop.shipping.apps.ShippingConfig",        # forked for the shop's shipping methods
    "oscar.apps.catalogue.apps.CatalogueConfig",
    "oscar.apps.catalogue.reviews.apps.CatalogueReviewsConfig",
    "oscar.apps.communication.apps.CommunicationConfig",
    "oscar.apps.partner.apps.PartnerConfig",
    "oscar.apps.basket.apps.BasketConfig",
    "oscar.apps.payment.apps.PaymentConfig",
    "oscar.apps.offer.apps.OfferConfig",
    "oscar.apps.order.apps.OrderConfig",
    "oscar.apps.customer.apps.CustomerConfig",
    "oscar.apps.search.apps.SearchConfig",
    "oscar.apps.voucher.apps.VoucherConfig",
    "oscar.apps.wishlists.apps.WishlistsConfig",
    "oscar.apps.dashboard.apps.DashboardConfig",
    "oscar.apps.dashboard.reports.apps.ReportsDashboardConfig",
    "oscar.apps.dashboard.users.apps.UsersDashboardConfig",
    "oscar.apps.dashboard.orders.apps.OrdersDashboardConfig",
    "oscar.apps.dashboard.catalogue.apps.CatalogueDashboardConfig",
    "oscar.apps.dashboard.offers.apps.OffersDashboardConfig",
    "oscar.apps.dashboard.partners.apps.PartnersDashboardConfig",
    "oscar.apps.dashboard.pages.apps.PagesDashboardConfig",
    "oscar.apps.dashboard.ranges.apps.RangesDashboardConfig",
    "oscar.apps.dashboard.reviews.apps.ReviewsDashboardConfig",
    "oscar.apps.dashboard.vouchers.apps.VouchersDashboardConfig",
    "oscar.apps.dashboard.communications.apps.CommunicationsDashboardConfig",
    "oscar.apps.dashboard.shipping.apps.ShippingDashboardConfig",
    "widget_tweaks", "haystack", "treebeard", "sorl.thumbnail", "django_tables2",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "oscar.apps.basket.middleware.BasketMiddleware",
    "django.contrib.flatpages.middleware.FlatpageFallbackMiddleware",
]

AUTHENTICATION_BACKENDS = ["oscar.apps.customer.auth_backends.EmailBackend",
                           "django.contrib.auth.backends.ModelBackend"]

TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.debug", "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth", "django.template.context_processors.i18n",
        "django.contrib.messages.context_processors.messages",
        "oscar.apps.search.context_processors.search_form",
        "oscar.apps.checkout.context_processors.checkout",
        "oscar.apps.communication.notifications.context_processors.notifications",
        "oscar.core.context_processors.metadata",
    ]},
}]

STATIC_URL = "/static/"
STATIC_ROOT = str(DATA / "static")
MEDIA_URL = "/media/"
MEDIA_ROOT = str(DATA / "media")
THUMBNAIL_DEBUG = False
THUMBNAIL_KVSTORE = "sorl.thumbnail.kvstores.cached_db_kvstore.KVStore"

OSCAR_SHOP_NAME = "Simshop"
OSCAR_DEFAULT_CURRENCY = "USD"
OSCAR_ALLOW_ANON_CHECKOUT = True
OSCAR_MODERATE_REVIEWS = False
OSCAR_SEND_REGISTRATION_EMAIL = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
LOGGING = {"version": 1, "disable_existing_loggers": False,
           "handlers": {"console": {"class": "logging.StreamHandler"}},
           "root": {"handlers": ["console"], "level": "WARNING"}}
