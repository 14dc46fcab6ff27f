"""Django settings of the pretix counterpart: pretix's own, read from ``pretix.cfg``, with
what a loopback sandbox needs on top.

* Mail goes to Django's in-memory backend: nothing is ever sent.
* Only 127.0.0.1 / localhost are served.
* The clock is simweb's "today": the booking world's day 0 (2026-01-01, 09:00 UTC) at
  server start, then ticking, so that dates, presale windows and cancellation deadlines
  read as they do in simweb whatever the wall clock says (``SIMWEB_PRETIX_TODAY``).
* Cookies carry no expiry date: the browser's clock is the real one, and a cookie whose
  expiry is computed from the travelled clock would already have expired.
"""
import datetime
import os

import time_machine

_TODAY = os.environ.get("SIMWEB_PRETIX_TODAY", "2026-01-01T09:00:00+00:00")
_CLOCK = time_machine.travel(datetime.datetime.fromisoformat(_TODAY), tick=True)
_CLOCK.start()

from pretix.settings import *  # noqa: E402,F401,F403

EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
CSRF_COOKIE_AGE = None
LANGUAGE_COOKIE_AGE = None
