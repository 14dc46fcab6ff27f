"""The fork keeps Oscar's shipping models unchanged (migrations: MIGRATION_MODULES)."""
from oscar.apps.shipping.models import *  # noqa: F401,F403  (Oscar's documented fork pattern)
