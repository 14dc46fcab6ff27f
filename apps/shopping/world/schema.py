"""The shop world's tables (SQLAlchemy models), how their rows read (row maps), and the
storage layout's fingerprint."""
from __future__ import annotations

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simweb.core.world import MetaTable, RowMap
from simweb.core.worlddb import schema_fingerprint

APP = "shopping"
#: Bump whenever generated content or schema changes: it is part of the cache
#: file name and of the content hash, so stale worlds are never reused.
GENERATOR_VERSION = 3

#: The day the world snapshot was taken.  All generated history (products'
#: ``created_day``, reviews, orders) is before it; coupons expiring on or after
#: it are still valid when a session starts.
WORLD_DAY = 0


# ===========================================================================
# Schema (SQLAlchemy 2 declarative).  Indexes are created after bulk loading.
# ===========================================================================


class Base(DeclarativeBase):
    """Declarative base of the shop world schema."""


class Meta(MetaTable, Base):
    """Key/value facts about the world (generator version, seed, size, hash...)."""


class Category(Base):
    """A department (``parent_id`` None) or a leaf category."""

    __tablename__ = "categories"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String)
    slug: Mapped[str] = mapped_column(String)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("categories.id"))
    __table_args__ = (Index("ix_categories_slug", "slug", unique=True),)


class Brand(Base):
    """A maker or publisher."""

    __tablename__ = "brands"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String)
    slug: Mapped[str] = mapped_column(String)
    __table_args__ = (Index("ix_brands_slug", "slug", unique=True),)


class BrandDepartment(Base):
    """Which departments a brand sells in."""

    __tablename__ = "brand_departments"
    brand_id: Mapped[int] = mapped_column(ForeignKey("brands.id"), primary_key=True)
    category_id: Mapped[int] = mapped_column(ForeignKey("categories.id"), primary_key=True)


class Product(Base):
    """A catalog product (always in a leaf category)."""

    __tablename__ = "products"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    sku: Mapped[str] = mapped_column(String)
    name: Mapped[str] = mapped_column(String)
    slug: Mapped[str] = mapped_column(String)
    brand_id: Mapped[int] = mapped_column(ForeignKey("brands.id"))
    category_id: Mapped[int] = mapped_column(ForeignKey("categories.id"))
    price_cents: Mapped[int] = mapped_column(Integer)
    list_price_cents: Mapped[int] = mapped_column(Integer)
    rating: Mapped[float] = mapped_column(Float)
    review_count: Mapped[int] = mapped_column(Integer)
    stock: Mapped[int] = mapped_column(Integer)
    description: Mapped[str] = mapped_column(Text)
    options: Mapped[dict] = mapped_column(JSON)
    attributes: Mapped[dict] = mapped_column(JSON)
    created_day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_products_slug", "slug", unique=True),)


class Tag(Base):
    """A filterable (kind, value) pair: ``attr:material=merino``, ``opt:size=m``."""

    __tablename__ = "tags"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String)
    value: Mapped[str] = mapped_column(String)
    count: Mapped[int] = mapped_column(Integer)  # posting length, for query planning
    __table_args__ = (Index("ix_tags_kind_value", "kind", "value", unique=True),)


class ProductTag(Base):
    """Posting lists of :class:`Tag`, split by department (WITHOUT ROWID: one b-tree).

    Keying by department makes "color=black within Shoes" a single key range,
    so a tag can drive a query instead of being probed row by row.
    """

    __tablename__ = "product_tags"
    tag_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    department_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    product_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    __table_args__ = {"sqlite_with_rowid": False}


class TagCount(Base):
    """Posting length of a tag within a department (query planning statistics)."""

    __tablename__ = "tag_counts"
    tag_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    department_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    count: Mapped[int] = mapped_column(Integer)


class ProductSearch(Base):
    """Narrow, popularity-ordered copy of the filter/sort columns of products.

    ``pop_rank`` (1 = most reviews, ties by id) is also the FTS rowid, so a
    scan of FTS matches in rowid order visits the most popular products first.
    """

    __tablename__ = "product_search"
    pop_rank: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id"))
    category_id: Mapped[int] = mapped_column(Integer)
    # Departments get their own column so "department, sorted by price" is one
    # index range instead of five merged ones.
    department_id: Mapped[int] = mapped_column(Integer)
    brand_id: Mapped[int] = mapped_column(Integer)
    price_cents: Mapped[int] = mapped_column(Integer)
    rating: Mapped[float] = mapped_column(Float)
    review_count: Mapped[int] = mapped_column(Integer)
    stock: Mapped[int] = mapped_column(Integer)
    created_day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (
        Index("ix_ps_product", "product_id", unique=True),
        Index("ix_ps_category_price", "category_id", "price_cents"),
        Index("ix_ps_department_price", "department_id", "price_cents"),
        Index("ix_ps_brand", "brand_id"),
        Index("ix_ps_price_asc", "price_cents", "product_id"),
    )


# Sort orders that mix directions need their own indexes (SQLite cannot walk
# one index forwards for "price DESC, id ASC").  Secondary indexes end with
# the rowid (pop_rank), which gives "rating DESC, pop_rank ASC" for free.
Index("ix_ps_price_desc", ProductSearch.price_cents.desc(), ProductSearch.product_id)
Index("ix_ps_rating", ProductSearch.rating.desc())
Index("ix_ps_newest", ProductSearch.created_day.desc(), ProductSearch.product_id)


class Review(Base):
    """A stored customer review."""

    __tablename__ = "reviews"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    rating: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String)
    body: Mapped[str] = mapped_column(Text)
    day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_reviews_product_day", "product_id", "day", "id"),)


class User(Base):
    """A registered shopper (plain-text synthetic password: tasks sign in as them)."""

    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    username: Mapped[str] = mapped_column(String)
    email: Mapped[str] = mapped_column(String)
    full_name: Mapped[str] = mapped_column(String)
    password: Mapped[str] = mapped_column(String)
    default_address_id: Mapped[int] = mapped_column(Integer)
    created_day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (
        Index("ix_users_username", "username", unique=True),
        Index("ix_users_email", "email", unique=True),
    )


class Address(Base):
    """A saved shipping address of a user."""

    __tablename__ = "addresses"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    full_name: Mapped[str] = mapped_column(String)
    street: Mapped[str] = mapped_column(String)
    city: Mapped[str] = mapped_column(String)
    state: Mapped[str] = mapped_column(String)
    zip: Mapped[str] = mapped_column(String)
    country: Mapped[str] = mapped_column(String)
    phone: Mapped[str] = mapped_column(String)
    is_default: Mapped[bool] = mapped_column(Boolean)
    __table_args__ = (Index("ix_addresses_user", "user_id"),)


class Coupon(Base):
    """A coupon code (``value``: percent for ``percent``, cents for ``fixed``)."""

    __tablename__ = "coupons"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    code: Mapped[str] = mapped_column(String)
    kind: Mapped[str] = mapped_column(String)
    value: Mapped[int] = mapped_column(Integer)
    min_subtotal_cents: Mapped[int] = mapped_column(Integer)
    expires_day: Mapped[int] = mapped_column(Integer)
    active: Mapped[bool] = mapped_column(Boolean)
    category_id: Mapped[int | None] = mapped_column(ForeignKey("categories.id"))
    one_per_user: Mapped[bool] = mapped_column(Boolean)
    description: Mapped[str] = mapped_column(String)
    __table_args__ = (Index("ix_coupons_code", "code", unique=True),)


class Order(Base):
    """A past order of a world user (ids are chronological)."""

    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    day: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String)
    items: Mapped[list] = mapped_column(JSON)
    subtotal_cents: Mapped[int] = mapped_column(Integer)
    shipping_cents: Mapped[int] = mapped_column(Integer)
    discount_cents: Mapped[int] = mapped_column(Integer)
    total_cents: Mapped[int] = mapped_column(Integer)
    shipping_method: Mapped[str] = mapped_column(String)
    address_id: Mapped[int] = mapped_column(ForeignKey("addresses.id"))
    coupon: Mapped[str | None] = mapped_column(String)
    __table_args__ = (Index("ix_orders_user", "user_id", "day"),)


class FacetCount(Base):
    """Precomputed facet counts for browsing (no query) per category; 0 = all."""

    __tablename__ = "facet_counts"
    category_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String, primary_key=True)
    key: Mapped[int] = mapped_column(Integer, primary_key=True)
    count: Mapped[int] = mapped_column(Integer)


_FTS_DDL = ("CREATE VIRTUAL TABLE products_fts USING fts5(name, brand, category, description,"
            " content='products_fts_src', content_rowid='doc_id',"
            " tokenize='porter unicode61 remove_diacritics 2', prefix='3')")
_FTS_RANK = "bm25(10.0, 4.0, 3.0, 1.0)"

SCHEMA_FINGERPRINT = schema_fingerprint(GENERATOR_VERSION, Base.metadata, _FTS_DDL, _FTS_RANK)

#: World rows as dicts, derived from the models (the read API adds what a page shows).
PRODUCT_ROWS = RowMap(Product)
USER_ROWS = RowMap(User)
ADDRESS_ROWS = RowMap(Address)
ORDER_ROWS = RowMap(Order)
COUPON_ROWS = RowMap(Coupon)
