"""The shop world's read API (:class:`ShopWorld`): products, search and facets, people,
orders and coupons, as plain JSON-able values."""
from __future__ import annotations

import re
import sqlite3
from bisect import bisect_left as _bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

from simweb.core import fulltext
from simweb.core.state import deep_copy
from simweb.core.text import plural
from simweb.core.world import RowCache
from simweb.core.worlddb import Rng, WorldFile

from .build import _build_world
from .catalog import (
    _DESCENDANT_LEAVES,
    FILTERABLE_ATTRS,
    OPTION_KINDS,
    PRICE_BUCKETS,
    RATING_BUCKETS,
    category_ancestors,
)
from .schema import (
    ADDRESS_ROWS,
    APP,
    COUPON_ROWS,
    GENERATOR_VERSION,
    ORDER_ROWS,
    PRODUCT_ROWS,
    SCHEMA_FINGERPRINT,
    USER_ROWS,
    WORLD_DAY,
)

#: Accepted ``sort`` values of :meth:`ShopWorld.search`.
SORTS = ("relevance", "price_asc", "price_desc", "rating", "reviews", "newest")
#: ``search()`` totals are exact up to this many results, then capped.
COUNT_CAP = 10_000
#: With a text query, bm25 ranks the most popular this-many matches; the rest
#: follow in popularity order (bounds ranking cost on huge worlds).
RELEVANCE_POOL = 2_000
#: Sidebar facets of a text query count its this-many most popular matches (marked
#: ``approximate`` beyond): the sidebar is a guide, and counting 10,000 rows per page
#: view tripled the search page's cost on the 1M world.
FACET_CAP = 2_000
#: The last query word matches as a prefix unless it alone is in this many products.
PREFIX_COMMON_DF = 1_000
MAX_PER_PAGE = 100
#: The upper bounds of PRICE_BUCKETS but the open last one: a price's bucket is
#: ``bisect_left(_PRICE_TOPS, price)`` (the first bucket whose top it does not exceed).
_PRICE_TOPS: tuple[int, ...] = tuple(hi for _, hi in PRICE_BUCKETS if hi is not None)
assert len(_PRICE_TOPS) == len(PRICE_BUCKETS) - 1 and PRICE_BUCKETS[-1][1] is None

_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have in into is it its of on or our that the "
    "their this to was were will with you your i me my we us they them he she his her not no "
    "so if than then there these those what which who whom why how all any both each few more "
    "most other some such only own same too very can just should now also".split()
)


_MAX_TERMS = 10
_BROWSE_ORDER = {
    "relevance": "pop_rank",
    "reviews": "pop_rank",
    "price_asc": "price_cents, product_id",
    "price_desc": "price_cents DESC, product_id",
    "rating": "rating DESC, pop_rank",
    "newest": "created_day DESC, product_id",
}
# The same orders qualified for queries that join product_tags.
_BROWSE_ORDER_D = {k: re.sub(r"\b(pop_rank|price_cents|product_id|rating|created_day)\b", r"d.\1", v)
                   for k, v in _BROWSE_ORDER.items()}
_TABLES = ("products", "users", "orders", "reviews", "addresses", "coupons", "brands",
           "categories")


def match_expression(query: str) -> str | None:
    """The FTS5 MATCH expression for a user's query (see :func:`simweb.fulltext.match_expression`):
    quoted words minus stopwords, ANDed, at most ``_MAX_TERMS``, the last one a prefix."""
    return fulltext.match_expression(query, _STOPWORDS, _MAX_TERMS)


@dataclass(frozen=True)
class _Cond:
    """One search filter: SQL (``{}`` = where an index-disabling ``+`` may go),
    its parameters, the product_search column it can use an index on, and the
    estimated share of products that pass it."""

    sql: str
    params: list[Any]
    column: str | None
    selectivity: float
    tag: int | None = None  # tag filters: the tag id ...
    department: int | None = None  # ... the department it is restricted to (if any) ...
    posting: int = 0  # ... and how many products that (tag, department) range holds

    def render(self, plain: bool) -> str:
        """SQL text; with ``plain`` the column is wrapped so no index is used for it."""
        return self.sql.replace("{}", "+" if plain else "")


# Leading column of each sort's index (see the ix_ps_* indexes).
_SORT_COLUMN = {"relevance": "pop_rank", "reviews": "pop_rank", "price_asc": "price_cents",
                "price_desc": "price_cents", "rating": "rating", "newest": "created_day"}
_INDEXED_FILTERS = {"category_id", "department_id", "brand_id", "price_cents", "rating"}
# Filters whose products' prices cluster (boots cost more than socks): walking
# the global price index for them can scan most of the catalog.
_PRICE_CORRELATED = {"category_id", "department_id", "brand_id"}


def _pages(total: int, per_page: int) -> int:
    return (total + per_page - 1) // per_page


class ShopWorld(WorldFile):
    """Read-only access to one generated shop world.

    Every method returns plain JSON-able values (dicts, lists, ints, strings,
    floats, bools, None), never ORM objects; lists are in a deterministic order
    with the id as the final tie-breaker.  Instances are thread-safe (one
    SQLite connection per thread) and fork-safe.  Use :meth:`load`.
    """

    APP = APP
    GENERATOR_VERSION = GENERATOR_VERSION
    SCHEMA_FINGERPRINT = SCHEMA_FINGERPRINT
    DEFAULT_SIZE = 10_000
    MIN_SIZE = 1
    ID_TABLES = _TABLES
    #: how rows of each table read (the runtime schema's ``required: columns`` lists their keys)
    ROW_MAPS = {m.table: m for m in (PRODUCT_ROWS, USER_ROWS, ADDRESS_ROWS, ORDER_ROWS, COUPON_ROWS)}
    build = staticmethod(_build_world)

    seed: int
    size: int
    hash: str
    path: str

    def __init__(self, path: Path | str, *, built: bool = False) -> None:
        super().__init__(path, built=built)
        conn = self._db.conn()
        self._categories = [
            {"id": cid, "name": name, "slug": slug, "parent_id": parent}
            for cid, name, slug, parent in conn.execute(
                "SELECT id, name, slug, parent_id FROM categories ORDER BY id")
        ]
        self._category_by_id = {c["id"]: c for c in self._categories}
        self._category_by_slug = {c["slug"]: c for c in self._categories}
        totals = dict(conn.execute("SELECT category_id, count FROM facet_counts WHERE kind = 'total'"))
        for c in self._categories:
            c["product_count"] = int(totals.get(c["id"], 0))
        depts: dict[int, list[int]] = {}
        for bid, cid in conn.execute("SELECT brand_id, category_id FROM brand_departments ORDER BY 1, 2"):
            depts.setdefault(bid, []).append(cid)
        self._brands = [
            {"id": bid, "name": name, "slug": slug, "department_ids": depts.get(bid, [])}
            for bid, name, slug in conn.execute("SELECT id, name, slug FROM brands ORDER BY id")
        ]
        self._brand_by_id = {b["id"]: b for b in self._brands}
        self._tags: dict[tuple[str, str], tuple[int, int]] = {
            (kind, value): (tid, count)
            for tid, kind, value, count in conn.execute("SELECT id, kind, value, count FROM tags")
        }
        self._tag_dept_counts: dict[tuple[int, int], int] = {
            (tid, dept): count
            for tid, dept, count in conn.execute("SELECT tag_id, department_id, count FROM tag_counts")
        }
        # Whole-catalog facet counts double as selectivity estimates for planning.
        root: dict[str, dict[int, int]] = {}
        for kind, key, count in conn.execute("SELECT kind, key, count FROM facet_counts WHERE category_id = 0"):
            root.setdefault(kind, {})[key] = count
        self._root_brand_counts = root.get("brand", {})
        self._root_price_counts = [root.get("price", {}).get(i, 0) for i in range(len(PRICE_BUCKETS))]
        self._root_rating_counts = [root.get("rating", {}).get(m, 0) for m in RATING_BUCKETS]
        self._root_in_stock = root.get("in_stock", {}).get(0, 0)
        self._product_rows = RowCache(PRODUCT_ROWS, 8_192, self._product_dict)
        self._user_rows = RowCache(USER_ROWS, 4_096)
        self._facet_cache: dict[int, dict[str, Any]] = {}
        self._prefix = fulltext.PrefixPolicy("products_fts", PREFIX_COMMON_DF)

    # -- products -------------------------------------------------------------

    def _product_dict(self, row: Sequence[Any]) -> dict[str, Any]:
        """A product's columns and what a page shows of its brand, category and price."""
        p = PRODUCT_ROWS(row)
        cat = self._category_by_id[p["category_id"]]
        p.update(brand_name=self._brand_by_id[p["brand_id"]]["name"], category_name=cat["name"],
                 department_id=cat["parent_id"], on_sale=p["list_price_cents"] > p["price_cents"],
                 in_stock=p["stock"] > 0)
        return p

    def product(self, pid: int) -> dict[str, Any] | None:
        """One product by id, or None."""
        pid = int(pid)
        return self._product_rows.get(self._conn, pid)

    def product_by_slug(self, slug: str) -> dict[str, Any] | None:
        """One product by slug, or None."""
        row = self._conn().execute(PRODUCT_ROWS.select("slug = ?"), (slug,)).fetchone()
        return None if row is None else self._product_dict(row)

    def products(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        """Products for ``ids`` in the given order; unknown ids are skipped."""
        return self._product_rows.in_order(self._conn, [int(pid) for pid in ids])

    # -- search ---------------------------------------------------------------

    def _filters(self, category: int | None, brand: int | Sequence[int] | None,
                 price_min_cents: int | None, price_max_cents: int | None,
                 rating_min: float | None, in_stock: bool, attrs: dict[str, str] | None,
                 option: dict[str, str] | None) -> list[_Cond] | None:
        """Conditions on ``product_search d`` with selectivity estimates.

        Returns None if nothing can match (unknown category, unknown value).
        """
        n = max(1, self.size)
        conds: list[_Cond] = []
        dept: int | None = None
        if category is not None:
            cat = self._category_by_id.get(int(category))
            if cat is None:
                return None
            dept = cat["parent_id"] or cat["id"]
            sel = cat["product_count"] / n
            if cat["parent_id"] is None:
                conds.append(_Cond("{}d.department_id = ?", [cat["id"]], "department_id", sel))
            else:
                conds.append(_Cond("{}d.category_id = ?", [cat["id"]], "category_id", sel))
        if brand is not None:
            ids = [int(brand)] if isinstance(brand, int) else sorted({int(b) for b in brand})
            if ids:
                sql = "{}d.brand_id = ?" if len(ids) == 1 else f"{{}}d.brand_id IN ({','.join('?' * len(ids))})"
                sel = sum(self._root_brand_counts.get(b, 0) for b in ids) / n
                conds.append(_Cond(sql, ids, "brand_id", sel))
        if price_min_cents is not None or price_max_cents is not None:
            lo = -1 if price_min_cents is None else int(price_min_cents)
            hi = None if price_max_cents is None else int(price_max_cents)
            parts, params = [], []
            if price_min_cents is not None:
                parts.append("{}d.price_cents >= ?")
                params.append(lo)
            if hi is not None:
                parts.append("{}d.price_cents <= ?")
                params.append(hi)
            conds.append(_Cond(" AND ".join(parts), params, "price_cents", self._price_selectivity(lo, hi)))
        if rating_min is not None:
            conds.append(_Cond("{}d.rating >= ?", [float(rating_min)], "rating",
                               self._rating_selectivity(float(rating_min))))
        if in_stock:
            conds.append(_Cond("d.stock > 0", [], None, self._root_in_stock / n))
        for prefix, allowed, given in (("attr:", FILTERABLE_ATTRS, attrs), ("opt:", OPTION_KINDS, option)):
            for key in sorted(given or {}):
                if key not in allowed:
                    raise ValueError(f"cannot filter on {prefix[:-1]} {key!r}; allowed: {allowed}")
                tag = self._tags.get((prefix + key, str(given[key]).lower()))  # type: ignore[index]
                if tag is None:
                    return None
                tid, total = tag
                if dept is None:
                    posting, share = total, total / n
                else:
                    posting = self._tag_dept_counts.get((tid, dept), 0)
                    if posting == 0:
                        return None  # e.g. color=black among books
                    # P(tag | department) stands in for P(tag | category).
                    share = posting / max(1, self._category_by_id[dept]["product_count"])
                conds.append(_Cond(
                    "EXISTS (SELECT 1 FROM product_tags t WHERE t.tag_id = ? AND"
                    " t.department_id = d.department_id AND t.product_id = d.product_id)",
                    [tid], None, min(1.0, share), tag=tid, department=dept,
                    posting=posting))
        return conds

    def _price_selectivity(self, lo: int, hi: int | None) -> float:
        """Share of products priced in [lo, hi], interpolating inside facet buckets."""
        covered = 0.0
        for (b_lo, b_hi), count in zip(PRICE_BUCKETS, self._root_price_counts, strict=True):
            top = b_hi if b_hi is not None else 10 * b_lo
            a, b = max(lo, b_lo), min(top if hi is None else hi, top)
            if b >= a and count:
                covered += count * (b - a + 1) / (top - b_lo + 1)
        return covered / max(1, self.size)

    def _rating_selectivity(self, r: float) -> float:
        """Share of products rated >= r (linear between the "N & up" counts)."""
        at = {m: c for m, c in zip(RATING_BUCKETS, self._root_rating_counts, strict=True)}
        at[5] = 0
        at[0] = self.size
        m = min(5, max(0, int(r)))
        frac = r - m
        upper = at.get(m + 1, 0)
        est = at[m] - (at[m] - upper) * frac if m < 5 else at[4] * 0.05
        return min(1.0, max(0.0, est) / max(1, self.size))

    def search(self, query: str = "", *, category: int | None = None,
               brand: int | list[int] | None = None, price_min_cents: int | None = None,
               price_max_cents: int | None = None, rating_min: float | None = None,
               in_stock: bool = False, attrs: dict[str, str] | None = None,
               option: dict[str, str] | None = None, sort: str = "relevance", page: int = 1,
               per_page: int = 24) -> dict[str, Any]:
        """Search / browse the catalog.

        Returns ``{"total", "page", "pages", "per_page", "capped", "items"}``
        with product dicts as items.

        * ``query``: free text (see :func:`match_expression`: never raises on
          FTS syntax, stopwords dropped, AND semantics, prefix on the last
          word unless that word alone is in :data:`PREFIX_COMMON_DF`+
          products).  Empty or stopwords-only = browse.
        * Filters: ``category`` (includes its descendants; unknown id = no
          results), ``brand`` (one id, or a list = any of; ``[]`` = no
          filter), inclusive price bounds, ``rating_min``, ``in_stock``,
          ``attrs`` (``{name: value}`` over :data:`FILTERABLE_ATTRS`),
          ``option`` (``{kind: value}``: the product offers that value; kinds
          in :data:`OPTION_KINDS`).  Value matching is case-insensitive.
          Unknown attribute/option names raise ValueError; unknown values
          just match nothing.
        * ``sort``: ``relevance`` (bm25 with a query, else popularity),
          ``price_asc``, ``price_desc``, ``rating`` (then popularity),
          ``reviews`` (review_count desc) or ``newest`` (created_day desc);
          ties by product id / popularity rank.  Others raise ValueError.
        * ``total`` is exact up to :data:`COUNT_CAP`; beyond, it is
          ``COUNT_CAP`` and ``capped`` is True.  Pages past the cap are empty.
          Browsing (no query) always sorts the whole filtered catalog.  With a
          query and more than ``COUNT_CAP`` matches, the results are the
          ``COUNT_CAP`` most popular matches (then sorted as asked); with a
          query and more than :data:`RELEVANCE_POOL` matches, relevance order
          ranks the most popular ``RELEVANCE_POOL`` by bm25, followed by the
          rest by popularity.  Below those sizes all of this is exact.
        * ``page`` starts at 1; ``per_page`` is clamped to 1..100.
        """
        if sort not in _BROWSE_ORDER:
            raise ValueError(f"unknown sort {sort!r}; expected one of {SORTS}")
        page = max(1, int(page))
        per_page = max(1, min(MAX_PER_PAGE, int(per_page)))
        offset = (page - 1) * per_page
        f = self._filters(category, brand, price_min_cents, price_max_cents, rating_min,
                          in_stock, attrs, option)
        empty = {"total": 0, "page": page, "pages": 0, "per_page": per_page, "capped": False,
                 "items": []}
        if f is None:
            return empty
        conn = self._conn()
        expr = self._expression(conn, query)
        if expr is None:
            n, ids = self._browse(conn, f, sort, offset, per_page)
            total = min(n, COUNT_CAP)
        else:
            try:
                total, n, ids = self._text_search(conn, expr, f, sort, offset, per_page)
            except sqlite3.OperationalError as exc:  # defensive: malformed MATCH = no results
                if "fts5" not in str(exc):
                    raise
                return empty
        return {"total": total, "page": page, "pages": _pages(total, per_page),
                "per_page": per_page, "capped": n > COUNT_CAP, "items": self.products(ids)}

    def on_first_page(self, query: str, product_id: int, per_page: int = 24) -> bool:
        """Whether ``search(query, per_page=per_page)`` lists ``product_id`` on page 1.

        The same answer as looking through that page, found with one query when the text
        matches at most ``per_page`` products: then the page holds every match (whatever
        their bm25 order), so ranking them is not needed. Task samplers ask this of every
        product they draw; only a common name needs the whole search."""
        conn = self._conn()
        expr = self._expression(conn, query)
        if expr is not None and 0 < per_page <= min(MAX_PER_PAGE, RELEVANCE_POOL, COUNT_CAP):
            fts = "products_fts"
            try:
                ids = [r[0] for r in conn.execute(
                    f"SELECT d.product_id FROM {fts} JOIN product_search d ON d.pop_rank = {fts}.rowid"
                    f" WHERE {fts} MATCH ? LIMIT ?", (expr, per_page + 1))]
            except sqlite3.OperationalError as exc:  # as search(): malformed MATCH = no results
                if "fts5" not in str(exc):
                    raise
                return False
            if len(ids) <= per_page:
                return int(product_id) in ids
        return any(i["id"] == product_id for i in self.search(query, per_page=per_page)["items"])

    def _expression(self, conn: sqlite3.Connection, query: str) -> str | None:
        """:func:`match_expression`, minus the last word's prefix if that word is common.

        Expanding a prefix means merging the postings of every word it starts;
        when the word itself is in :data:`PREFIX_COMMON_DF` or more products
        the user almost surely typed it whole, and the merge would dominate the
        query's cost on big worlds.
        """
        return self._prefix.apply(conn, match_expression(query or ""))

    def _browse(self, conn: sqlite3.Connection, conds: list[_Cond], sort: str, offset: int,
                per_page: int) -> tuple[int, list[int]]:
        """Filtered listing without text: (capped match count, page of product ids).

        SQLite's planner, left alone, tends to collect every row of the most
        selective *indexed* filter and sort them, which is slow for broad
        filters on big worlds.  Using row estimates from the precomputed facet
        and tag counts, pick the cheapest of: walking the sort order's index
        and skipping non-matches ("+col" keeps SQLite off the filters'
        indexes), collecting via an indexed filter and sorting, or letting a
        tag's (tag, department) posting range drive the query.
        """
        n_all = max(1, self.size)
        params = [p for c in conds for p in c.params]
        sel = 1.0
        for c in conds:
            sel *= max(c.selectivity, 1.0 / n_all)
        indexed = [c.selectivity for c in conds if c.column in _INDEXED_FILTERS]
        collect_rows = n_all * (min(indexed) if indexed else 1.0)
        tags = [c for c in conds if c.tag is not None]
        driver = min(tags, key=lambda c: c.posting) if tags else None
        if driver is not None and driver.posting >= collect_rows:
            driver = None
        if driver is not None:
            rest = [c for c in conds if c is not driver]
            dept_sql, dept_params = ("", []) if driver.department is None else \
                (" AND t.department_id = ?", [driver.department])
            # CROSS JOIN pins the posting range as the outer loop.
            src = ("FROM product_tags t CROSS JOIN product_search d ON d.product_id = t.product_id"
                   f" WHERE t.tag_id = ?{dept_sql}" + "".join(" AND " + c.render(True) for c in rest))
            src_params = [driver.tag, *dept_params, *[p for c in rest for p in c.params]]
        if not conds:
            n = self.size
        elif driver is not None:
            n = conn.execute(f"SELECT count(*) FROM (SELECT 1 {src} LIMIT {COUNT_CAP + 1})",
                             src_params).fetchone()[0]
        else:
            where = " AND ".join(c.render(False) for c in conds)
            n = conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM product_search d WHERE {where}"
                             f" LIMIT {COUNT_CAP + 1})", params).fetchone()[0]
        total = min(n, COUNT_CAP)
        if offset >= total:
            return n, []
        limit = min(per_page, total - offset)
        need = offset + limit
        sort_col = _SORT_COLUMN[sort]
        cat = next((c for c in conds if c.column in ("category_id", "department_id")), None)
        # Expected rows touched by each plan (sorting a collected set counts 1.5x).
        plans: dict[str, float] = {"collect": 1.5 * collect_rows}
        if not (sort_col == "price_cents" and any(c.column in _PRICE_CORRELATED for c in conds)):
            plans["walk"] = need / sel  # independence fails when prices cluster by filter
        if sort_col == "price_cents" and cat is not None:
            # (category|department, price) indexes yield the category in price order.
            plans["range"] = need * max(cat.selectivity, 1.0 / n_all) / sel
        if driver is not None:
            plans["drive"] = 1.5 * driver.posting
        plan = min(plans, key=lambda k: (plans[k], k))
        if plan == "drive":
            sql, args = f"SELECT d.product_id {src}", src_params
        else:
            def plain(c: _Cond) -> bool:
                if plan == "walk":
                    return c.column != sort_col
                if plan == "range":
                    return c is not cat and c.column != "price_cents"
                return False

            where = " AND ".join(c.render(plain(c)) for c in conds) or "1"
            sql, args = f"SELECT d.product_id FROM product_search d WHERE {where}", params
        ids = [r[0] for r in conn.execute(
            f"{sql} ORDER BY {_BROWSE_ORDER_D[sort]} LIMIT ? OFFSET ?", [*args, limit, offset])]
        return n, ids

    def _text_search(self, conn: sqlite3.Connection, expr: str, conds: list[_Cond], sort: str,
                     offset: int, per_page: int) -> tuple[int, int, list[int]]:
        """Text query: (capped total, raw capped count, page of product ids)."""
        fts = "products_fts"
        base = (f"FROM {fts} JOIN product_search d ON d.pop_rank = {fts}.rowid"
                f" WHERE {fts} MATCH ?" + "".join(" AND " + c.render(False) for c in conds))
        bparams = [expr, *[p for c in conds for p in c.params]]
        cap = COUNT_CAP
        if sort != "relevance":
            # One pass: materialize the (at most cap+1) most popular matches,
            # count them, drop the (cap+1)-th, sort the rest as asked.
            sql = (f"WITH r AS MATERIALIZED (SELECT d.product_id AS product_id, d.pop_rank AS pop_rank,"
                   f" d.price_cents AS price_cents, d.rating AS rating, d.created_day AS created_day"
                   f" {base} ORDER BY {fts}.rowid LIMIT {cap + 1}),"
                   f" s AS (SELECT count(*) AS n, max(pop_rank) AS last FROM r)"
                   f" SELECT s.n, r.product_id FROM r, s WHERE s.n <= {cap} OR r.pop_rank < s.last"
                   f" ORDER BY {_BROWSE_ORDER[sort]} LIMIT ? OFFSET ?")
            rows = conn.execute(sql, [*bparams, per_page, offset]).fetchall()
            if rows:
                n = rows[0][0]
            else:  # page past the end: count separately
                n = conn.execute(f"SELECT count(*) FROM (SELECT 1 {base} LIMIT {cap + 1})",
                                 bparams).fetchone()[0]
            return min(n, cap), n, [r[1] for r in rows]
        ranks: list[int] | None = None
        if conds or expr.endswith("*"):
            # One pass gives the count and the pool boundary (a prefix term is
            # expensive to expand, so expand it once here rather than twice).
            src = base if conds else f"FROM {fts} WHERE {fts} MATCH ?"
            ranks = [r[0] for r in conn.execute(
                f"SELECT {fts}.rowid {src} ORDER BY {fts}.rowid LIMIT {cap + 1}", bparams)]
            n = len(ranks)
        else:  # no join needed to count raw matches
            n = conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ?"
                             f" LIMIT {cap + 1})", (expr,)).fetchone()[0]
        total = min(n, cap)
        if offset >= total:
            return total, n, []
        end = min(offset + per_page, total)
        pool = min(RELEVANCE_POOL, total)
        cut: int | None = None
        if n > pool:  # popularity rank of the pool's last member
            cut = ranks[pool - 1] if ranks is not None else conn.execute(
                f"SELECT rowid FROM {fts} WHERE {fts} MATCH ? ORDER BY rowid LIMIT 1 OFFSET ?",
                (expr, pool - 1)).fetchone()[0]
        ids: list[int] = []
        if offset < pool:
            extra, eparams = ("", []) if cut is None else (f" AND {fts}.rowid <= ?", [cut])
            ids += [r[0] for r in conn.execute(
                f"SELECT d.product_id {base}{extra} ORDER BY {fts}.rank, {fts}.rowid LIMIT ? OFFSET ?",
                [*bparams, *eparams, min(end, pool) - offset, offset])]
        if end > pool and cut is not None:
            start = max(offset, pool)
            if ranks is not None:
                page_ranks = ranks[start:end]
                found = dict(conn.execute(
                    f"SELECT pop_rank, product_id FROM product_search WHERE pop_rank IN"
                    f" ({','.join('?' * len(page_ranks))})", page_ranks).fetchall())
                ids += [found[r] for r in page_ranks]
            else:
                ids += [r[0] for r in conn.execute(
                    f"SELECT d.product_id {base} AND {fts}.rowid > ? ORDER BY {fts}.rowid LIMIT ? OFFSET ?",
                    [*bparams, cut, end - start, start - pool])]
        return total, n, ids

    def facets(self, query: str = "", category: int | None = None) -> dict[str, Any]:
        """Filter-sidebar counts for a query within a category.

        ``{"total", "approximate", "brands": [{id, name, count}] (top 20 by
        count, then id), "price_ranges": [{min_cents, max_cents, label,
        count}] (all :data:`PRICE_BUCKETS`), "rating": [{min, label, count}]
        ("N stars & up"), "in_stock": int}``.  Each count equals the matching
        ``search(...).total`` with that one extra filter, except when a text
        query has more than :data:`FACET_CAP` matches: then counts cover the
        ``FACET_CAP`` most popular matches and ``approximate`` is True.
        Browsing facets (empty query) are precomputed and always exact.
        """
        expr = self._expression(self._conn(), query)
        if category is not None and int(category) not in _DESCENDANT_LEAVES:
            return self._facet_dict(0, {}, {}, {}, 0, False)
        if expr is None:
            return self._browse_facets(0 if category is None else int(category))
        conds = self._filters(category, None, None, None, None, False, None, None) or []
        fts = "products_fts"
        sql = (f"SELECT d.brand_id, d.price_cents, d.rating, d.stock FROM {fts}"
               f" JOIN product_search d ON d.pop_rank = {fts}.rowid WHERE {fts} MATCH ?"
               + "".join(" AND " + c.render(False) for c in conds)
               + f" ORDER BY {fts}.rowid LIMIT {FACET_CAP + 1}")
        try:
            rows = self._conn().execute(sql, [expr, *[p for c in conds for p in c.params]]).fetchall()
        except sqlite3.OperationalError as exc:
            if "fts5" not in str(exc):
                raise
            rows = []
        approximate = len(rows) > FACET_CAP
        rows = rows[:FACET_CAP]
        # Counted column by column in C (Counter, bisect) rather than row by row in
        # Python: up to FACET_CAP rows per search page on a big world.
        brand_col, price_col, rating_col, stock_col = zip(*rows) if rows else ((), (), (), ())
        brands: dict[int, int] = Counter(brand_col)
        prices: dict[int, int] = Counter(map(_bisect_left, repeat(_PRICE_TOPS), price_col))
        by_rating = sorted(rating_col)
        ratings = {m: len(by_rating) - _bisect_left(by_rating, m) for m in RATING_BUCKETS}
        in_stock = len(stock_col) - sum(1 for n in stock_col if n <= 0)
        return self._facet_dict(len(rows), brands, prices, ratings, in_stock, approximate)

    def _browse_facets(self, cid: int) -> dict[str, Any]:
        cached = self._facet_cache.get(cid)
        if cached is None:
            parts: dict[str, dict[int, int]] = {"brand": {}, "price": {}, "rating": {},
                                                "total": {}, "in_stock": {}}
            for kind, key, n in self._conn().execute(
                    "SELECT kind, key, count FROM facet_counts WHERE category_id = ?", (cid,)):
                parts[kind][key] = n
            cached = self._facet_dict(parts["total"].get(0, 0), parts["brand"], parts["price"],
                                      parts["rating"], parts["in_stock"].get(0, 0), False)
            self._facet_cache[cid] = cached
        return deep_copy(cached)  # callers may mutate their copy

    def _facet_dict(self, total: int, brands: dict[int, int], prices: dict[int, int],
                    ratings: dict[int, int], in_stock: int, approximate: bool) -> dict[str, Any]:
        top = sorted(brands.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
        ranges = []
        for i, (lo, hi) in enumerate(PRICE_BUCKETS):
            label = f"${lo // 100} and up" if hi is None else f"${lo // 100} to ${(hi + 1) // 100}"
            if lo == 0:
                label = f"Under ${(hi + 1) // 100}" if hi is not None else "Any price"
            ranges.append({"min_cents": lo, "max_cents": hi, "label": label, "count": prices.get(i, 0)})
        return {
            "total": total,
            "approximate": approximate,
            "brands": [{"id": bid, "name": self._brand_by_id[bid]["name"], "count": n} for bid, n in top],
            "price_ranges": ranges,
            "rating": [{"min": m, "label": f"{plural(m, 'star')} & up", "count": ratings.get(m, 0)}
                       for m in RATING_BUCKETS],
            "in_stock": in_stock,
        }

    # -- catalog structure -------------------------------------------------------

    def attribute_values(self, category: int, *, limit: int = 12) -> dict[str, list[dict[str, Any]]]:
        """Filterable attributes of ``category``'s department and their most common
        values: ``{name: [{value, count}]}`` (values lower-case, as matched; names in
        :data:`FILTERABLE_ATTRS` order; only attributes with two values or more; counts
        are over the whole department). For the filter sidebar."""
        dept = category_ancestors(int(category))[-1:] if category is not None else []
        if not dept:
            return {}
        rows = self._conn().execute(
            "SELECT t.kind, t.value, c.count FROM tag_counts c JOIN tags t ON t.id = c.tag_id"
            " WHERE c.department_id = ? AND t.kind LIKE 'attr:%' ORDER BY t.kind, c.count DESC, t.value",
            (dept[0],)).fetchall()
        out: dict[str, list[dict[str, Any]]] = {}
        for kind, value, count in rows:
            name = kind[5:]
            if name == "author":
                continue   # hundreds of authors: searched by text, not picked from a list
            values = out.setdefault(name, [])
            if len(values) < limit:
                values.append({"value": value, "count": count})
        return {n: out[n] for n in FILTERABLE_ATTRS if len(out.get(n, [])) >= 2}

    def categories(self) -> list[dict[str, Any]]:
        """All categories in tree order (each department followed by its leaves)."""
        return [dict(c) for c in self._categories]

    def category(self, cid: int) -> dict[str, Any] | None:
        """One category by id, or None."""
        c = self._category_by_id.get(int(cid))
        return None if c is None else dict(c)

    def category_by_slug(self, slug: str) -> dict[str, Any] | None:
        """One category by slug, or None."""
        c = self._category_by_slug.get(slug)
        return None if c is None else dict(c)

    def brands(self) -> list[dict[str, Any]]:
        """All brands by name (then id)."""
        return [dict(b, department_ids=list(b["department_ids"]))
                for b in sorted(self._brands, key=lambda b: (b["name"].lower(), b["id"]))]

    def brand(self, bid: int) -> dict[str, Any] | None:
        """One brand by id, or None."""
        b = self._brand_by_id.get(int(bid))
        return None if b is None else dict(b, department_ids=list(b["department_ids"]))

    # -- reviews ----------------------------------------------------------------

    def reviews(self, pid: int, page: int = 1, per_page: int = 10) -> dict[str, Any]:
        """Stored reviews of a product, newest first (then id desc).

        ``{"total", "page", "pages", "per_page", "review_count", "items"}``;
        ``total`` counts stored reviews, ``review_count`` is the product's
        displayed count (0 for an unknown product).
        """
        page = max(1, int(page))
        per_page = max(1, min(MAX_PER_PAGE, int(per_page)))
        conn = self._conn()
        pid = int(pid)
        total = conn.execute("SELECT count(*) FROM reviews WHERE product_id = ?", (pid,)).fetchone()[0]
        rows = conn.execute(
            "SELECT r.id, r.product_id, r.user_id, u.full_name, r.rating, r.title, r.body, r.day"
            " FROM reviews r JOIN users u ON u.id = r.user_id WHERE r.product_id = ?"
            " ORDER BY r.day DESC, r.id DESC LIMIT ? OFFSET ?",
            (pid, per_page, (page - 1) * per_page)).fetchall()
        p = self.product(pid)
        items = []
        for rid, rpid, uid, full_name, stars, title, body, day in rows:
            first, _, last = full_name.partition(" ")
            items.append({"id": rid, "product_id": rpid, "user_id": uid,
                          "author": f"{first} {last[:1]}." if last else first,
                          "rating": stars, "title": title, "body": body, "day": day})
        return {"total": total, "page": page, "pages": _pages(total, per_page), "per_page": per_page,
                "review_count": p["review_count"] if p else 0, "items": items}

    # -- people -------------------------------------------------------------------

    def user(self, uid: int) -> dict[str, Any] | None:
        """One user by id, or None (includes the synthetic plain-text password)."""
        uid = int(uid)
        return self._user_rows.get(self._conn, uid)

    def user_by_login(self, username_or_email: str) -> dict[str, Any] | None:
        """A user by username or email (case-insensitive, surrounding spaces ignored)."""
        key = (username_or_email or "").strip().lower()
        row = self._conn().execute(
            f"{USER_ROWS.select('username = ?')} UNION ALL {USER_ROWS.select('email = ?')} LIMIT 1",
            (key, key)).fetchone()
        return None if row is None else USER_ROWS(row)

    def addresses(self, uid: int) -> list[dict[str, Any]]:
        """A user's saved addresses, default first (then id)."""
        return ADDRESS_ROWS.rows(self._conn(), "user_id = ?", (int(uid),), order="is_default DESC, id")

    def address(self, aid: int) -> dict[str, Any] | None:
        """One address by id, or None."""
        return ADDRESS_ROWS.one(self._conn(), "id = ?", (int(aid),))

    def orders(self, uid: int) -> list[dict[str, Any]]:
        """A user's past orders, newest first (day desc, then id desc)."""
        return ORDER_ROWS.rows(self._conn(), "user_id = ?", (int(uid),), order="day DESC, id DESC")

    def order(self, oid: int) -> dict[str, Any] | None:
        """One order by id, or None."""
        return ORDER_ROWS.one(self._conn(), "id = ?", (int(oid),))

    # -- coupons ------------------------------------------------------------------

    def coupon(self, code: str) -> dict[str, Any] | None:
        """A coupon by code (case-insensitive, surrounding spaces ignored), or None.

        Returned whatever its state: callers check ``active`` and
        ``expires_day`` (see :func:`coupon_discount_cents`).
        """
        return COUPON_ROWS.one(self._conn(), "code = ?", ((code or "").strip().upper(),))

    def coupons(self) -> list[dict[str, Any]]:
        """All coupons by id (including expired and disabled ones)."""
        return COUPON_ROWS.rows(self._conn())

    # -- ids for the simulator and task generators ----------------------------------

    def _sample_where(self, table: str, where: dict[str, Any]) -> tuple[str, list[Any]]:
        def flag(sql_true: str, sql_false: str) -> Any:
            return lambda v: (sql_true if v else sql_false, [])

        def eq(col: str) -> Any:
            return lambda v: (f"{col} = ?", [v])

        def ge(col: str) -> Any:
            return lambda v: (f"{col} >= ?", [v])

        def le(col: str) -> Any:
            return lambda v: (f"{col} <= ?", [v])

        def in_category(v: Any) -> tuple[str, list[Any]]:
            leaves = _DESCENDANT_LEAVES.get(int(v), ())
            return (f"category_id IN ({','.join('?' * len(leaves))})" if leaves else "0", list(leaves))

        def option_kind(v: Any) -> tuple[str, list[Any]]:
            if v not in OPTION_KINDS:
                raise ValueError(f"unknown option kind {v!r}")
            return ("json_extract(options, ?) IS NOT NULL", [f"$.{v}"])

        def count_ge(child: str) -> Any:
            return lambda v: (f"(SELECT count(*) FROM {child} c WHERE c.user_id = users.id) >= ?", [int(v)])

        # table -> filter name -> value -> (SQL condition, its parameters)
        spec: dict[str, Any] = {
            "products": {
                "in_stock": flag("stock > 0", "stock = 0"),
                "on_sale": flag("list_price_cents > price_cents", "list_price_cents = price_cents"),
                "has_options": flag("options != '{}'", "options = '{}'"),
                "has_reviews": flag("review_count > 0", "review_count = 0"),
                "category": in_category, "brand": eq("brand_id"), "option_kind": option_kind,
                "min_reviews": ge("review_count"), "rating_min": ge("rating"),
                "price_min_cents": ge("price_cents"), "price_max_cents": le("price_cents"),
            },
            "users": {
                "has_orders": flag("EXISTS (SELECT 1 FROM orders o WHERE o.user_id = users.id)",
                                   "NOT EXISTS (SELECT 1 FROM orders o WHERE o.user_id = users.id)"),
                "min_orders": count_ge("orders"), "min_addresses": count_ge("addresses"),
            },
            "orders": {"status": eq("status"), "user_id": eq("user_id"),
                       "has_coupon": flag("coupon IS NOT NULL", "coupon IS NULL"),
                       "min_items": lambda v: ("json_array_length(items) >= ?", [int(v)])},
            "reviews": {"product_id": eq("product_id"), "user_id": eq("user_id"), "rating": eq("rating")},
            "addresses": {"user_id": eq("user_id"), "is_default": flag("is_default", "NOT is_default")},
            "coupons": {"active": flag("active", "NOT active"),
                        "expired": flag(f"expires_day < {WORLD_DAY}", f"expires_day >= {WORLD_DAY}"),
                        "kind": eq("kind"),
                        "has_category": flag("category_id IS NOT NULL", "category_id IS NULL"),
                        "one_per_user": flag("one_per_user", "NOT one_per_user")},
            "brands": {"department": lambda v: (
                "EXISTS (SELECT 1 FROM brand_departments x WHERE x.brand_id = brands.id AND x.category_id = ?)",
                [int(v)])},
            "categories": {"leaf": flag("parent_id IS NOT NULL", "parent_id IS NULL"),
                           "parent_id": eq("parent_id")},
        }[table]
        conds, params = [], []
        for key in sorted(where):
            if key not in spec:
                raise ValueError(f"unknown sample filter {key!r} for {table}; expected one of {sorted(spec)}")
            sql, p = spec[key](where[key])
            conds.append(sql)
            params.extend(p)
        return " AND ".join(conds) or "1", params

    def sample_ids(self, table: str, rng_seed: int, k: int,
                   where: dict[str, Any] | None = None) -> list[int]:
        """``min(k, matches)`` distinct ids of ``table`` rows, deterministic in ``rng_seed``.

        ``where`` filters (per table): products: in_stock, on_sale, has_options,
        has_reviews (bools), category, brand, option_kind, min_reviews,
        rating_min, price_min_cents, price_max_cents; users: has_orders,
        min_orders, min_addresses; orders: status, user_id, has_coupon,
        min_items; reviews: product_id, user_id, rating; addresses: user_id,
        is_default; coupons: active, expired, kind, has_category, one_per_user;
        brands: department; categories: leaf, parent_id.  Unknown keys raise
        ValueError.  The result is in draw order (not sorted).
        """
        if table not in self._max_ids:
            raise ValueError(f"unknown table {table!r}; expected one of {_TABLES}")
        rng = Rng.derive(APP, "sample", table, int(rng_seed))
        if not where:
            n = self._max_ids[table]  # ids are dense: 1..max
            return [i + 1 for i in rng.sample_indices(n, int(k))]
        sql, params = self._sample_where(table, where)
        ids = [r[0] for r in self._conn().execute(f"SELECT id FROM {table} WHERE {sql} ORDER BY id", params)]
        return [ids[i] for i in rng.sample_indices(len(ids), int(k))]
