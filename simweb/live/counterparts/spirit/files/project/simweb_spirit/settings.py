"""Settings of the Spirit counterpart: SQLite and a Whoosh index under the home's data/,
DEBUG off, loopback hosts only, no outgoing mail, no task queue, no network.

The data directory comes from ``SIMWEB_SPIRIT_DATA`` (set by the counterpart for every
command and for the server), so the project folder never changes at run time.  The app
list and middleware are Spirit's own project template's (spirit 0.14.3).
"""
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("SIMWEB_SPIRIT_DATA", BASE_DIR.parent / "data"))

SECRET_KEY = "simweb-spirit-loopback-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "spirit.core",
    "spirit.admin",
    "spirit.search",
    "spirit.user",
    "spirit.user.admin",
    "spirit.user.auth",
    "spirit.category",
    "spirit.category.admin",
    "spirit.topic",
    "spirit.topic.admin",
    "spirit.topic.favorite",
    "spirit.topic.moderate",
    "spirit.topic.notification",
    "spirit.topic.private",
    "spirit.topic.unread",
    "spirit.comment",
    "spirit.comment.bookmark",
    "spirit.comment.flag",
    "spirit.comment.flag.admin",
    "spirit.comment.history",
    "spirit.comment.like",
    "spirit.comment.poll",
    "djconfig",
    "haystack",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "spirit.user.middleware.TimezoneMiddleware",
    "spirit.user.middleware.LastIPMiddleware",
    "spirit.user.middleware.LastSeenMiddleware",
    "spirit.user.middleware.ActiveUserMiddleware",
    "spirit.core.middleware.PrivateForumMiddleware",
    "djconfig.middleware.DjConfigMiddleware",
]

TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.contrib.auth.context_processors.auth",
        "django.template.context_processors.debug",
        "django.template.context_processors.i18n",
        "django.template.context_processors.media",
        "django.template.context_processors.static",
        "django.template.context_processors.tz",
        "django.template.context_processors.request",
        "django.contrib.messages.context_processors.messages",
        "djconfig.context_processors.config",
    ]},
}]

DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(DATA_DIR / "spirit.sqlite3")}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

# In-process caches: nothing but the database file holds state, so a reset by copy is complete
# (the server restarts on reset, which empties them).
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "st_rate_limit": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                      "LOCATION": "spirit_rl_cache", "TIMEOUT": None},
}

AUTHENTICATION_BACKENDS = [
    "spirit.user.auth.backends.UsernameAuthBackend",
    "spirit.user.auth.backends.EmailAuthBackend",
]
# Seeding hashes a thousand passwords; a loopback test site does not need PBKDF2's cost.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

HAYSTACK_CONNECTIONS = {"default": {"ENGINE": "haystack.backends.whoosh_backend.WhooshEngine",
                                    "PATH": str(DATA_DIR / "search_index")}}
HAYSTACK_SIGNAL_PROCESSOR = "spirit.search.signals.RealtimeSignalProcessor"

ROOT_URLCONF = "simweb_spirit.urls"
WSGI_APPLICATION = None

LOGIN_URL = "spirit:user:auth:login"
LOGIN_REDIRECT_URL = "spirit:user:update"
LOGOUT_REDIRECT_URL = "spirit:index"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = str(DATA_DIR / "static")
MEDIA_URL = "/media/"
MEDIA_ROOT = str(DATA_DIR / "media")
STORAGES = {
    "default": {"BACKEND": "spirit.core.storage.OverwriteFileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# No mail leaves the machine: messages are dropped (registration, notifications).
EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
ST_SITE_URL = "http://127.0.0.1:8602/"
ST_TASK_MANAGER = None
ST_NOTIFY_WHEN = "never"
# Scripted episodes post within seconds of each other; the rate limit would turn them away.
ST_RATELIMIT_ENABLE = False
ST_UPLOAD_IMAGE_ENABLED = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django": {"handlers": ["console"], "level": "WARNING", "propagate": False}},
}
