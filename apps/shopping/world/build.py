"""Generation of one shop world into an empty SQLite file: the catalog and the customers
(their builder mixins), in a fixed order."""
from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

from simweb.core.worlddb import BuildProgress

from .catalog import _DEPARTMENTS, CatalogBuilder
from .customers import CustomerBuilder, n_users_for
from .schema import APP, GENERATOR_VERSION, SCHEMA_FINGERPRINT, WORLD_DAY, Base


class _Builder(CatalogBuilder, CustomerBuilder):
    """Generates one world into an empty SQLite file.

    Rows are produced in a fixed order and fed both to SQLite (``executemany``
    in large batches inside one transaction) and to the :class:`ContentHasher`.
    Per-entity random streams (``Rng.sub(base, id)``) keep each product/user's
    draws independent of the others'.
    """

    def __init__(self, path: Path, seed: int, size: int, progress: BuildProgress) -> None:
        super().__init__(path, APP, GENERATOR_VERSION, seed, size, progress, Base.metadata)
        self.n_users = n_users_for(size)
        self.brand_names: list[str] = [""]  # index = brand id
        self.dept_brands: list[list[int]] = [[] for _ in _DEPARTMENTS]
        self.tag_ids: dict[tuple[str, str], int] = {}
        self.postings: list[list[array]] = []  # [tag id - 1][department index] -> product ids
        self.user_created: list[int] = [0]
        self.user_addresses: list[list[int]] = [[]]
        self.coupons: list[dict[str, Any]] = []

    def run(self) -> str:
        """Build everything; returns the content hash."""
        self.begin()
        self.p.stage("catalog", 3)
        self._categories()
        self._brands()
        self.p.stage("products", self.size)
        self._products()
        self.p.stage("users", self.n_users)
        self._users()
        self.p.stage("coupons & orders", self.n_users)
        self._coupons()
        self._orders()
        self.p.stage("search index", 4)
        self._tags()
        self._search_tables()
        self.p.stage("indexes", len(Base.metadata.sorted_tables))
        self.create_indexes(advance=True)
        self.p.stage("facets & statistics", 2)
        self._facets()
        self.p.advance()
        return self.finish(SCHEMA_FINGERPRINT, world_day=str(WORLD_DAY))


def _build_world(path: Path, seed: int, size: int, progress: bool) -> str:
    with BuildProgress(progress, title=f"shop world seed={seed} size={size}:") as bar:
        return _Builder(path, seed, size, bar).run()
