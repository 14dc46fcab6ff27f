"""Settings of the Wagtail site standing in for simweb's cms app.

SQLite under the counterpart's data directory, DEBUG off, loopback hosts only, no mail
leaves the process (the locmem backend keeps it), Wagtail's database search backend (the
index lives in the same SQLite file, so a reset restores it with the database), no
update checks or usage pings to the network.
"""
import os
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent
DATA_DIR = Path(os.environ.get("SIMWEB_WAGTAIL_DATA", PROJECT_DIR.parent.parent / "data"))

SECRET_KEY = "simweb-wagtail-loopback-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "blog",
    "wagtail.contrib.forms",
    "wagtail.contrib.redirects",
    "wagtail.sites",
    "wagtail.users",
    "wagtail.snippets",
    "wagtail.documents",
    "wagtail.images",
    "wagtail.search",
    "wagtail.admin",
    "wagtail",
    "modelcluster",
    "taggit",
    "django_filters",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "wagtail.contrib.redirects.middleware.RedirectMiddleware",
]

ROOT_URLCONF = "simcms.urls"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [PROJECT_DIR / "templates"],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
WSGI_APPLICATION = None

DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DATA_DIR / "wagtail.sqlite3",
                         "OPTIONS": {"timeout": 20}}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
# Seeded users share one simple password; the validators would refuse it.
AUTH_PASSWORD_VALIDATORS: list = []
PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR.parent / "static"
MEDIA_ROOT = DATA_DIR / "media"
MEDIA_URL = "/media/"

EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
WAGTAIL_SITE_NAME = "Newsroom"
WAGTAILADMIN_BASE_URL = "http://127.0.0.1:8604"
WAGTAILSEARCH_BACKENDS = {"default": {"BACKEND": "wagtail.search.backends.database"}}
WAGTAIL_ENABLE_UPDATE_CHECK = False
WAGTAIL_ENABLE_WHATS_NEW_BANNER = False
WAGTAILADMIN_NOTIFICATION_USE_HTML = False
WAGTAIL_MODERATION_ENABLED = True
WAGTAIL_WORKFLOW_ENABLED = True
WAGTAILEMBEDS_FINDERS: list = []
# Wagtail 8's editor autosaves a draft by JavaScript half a second after a change. A
# reviewer's "Approve and Publish" then races an autosave of the same form: in 2 of 5
# episodes of one run the autosave landed after the publish (a newer draft than the live
# revision, once the page unpublished). Off, so a live run's end state does not depend on
# timing; saving stays the explicit "Save draft" (as in simweb's editor).
WAGTAIL_AUTOSAVE_INTERVAL = 0
# Tasks (search index updates, reference index) run in the request, not in a worker.
TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
LOGGING = {"version": 1, "disable_existing_loggers": False,
           "handlers": {"console": {"class": "logging.StreamHandler"}},
           "root": {"handlers": ["console"], "level": "WARNING"}}
