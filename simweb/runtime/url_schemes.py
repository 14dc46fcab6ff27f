"""URL schemes of site variants: ``/p/12`` on today's site, ``/product/12`` or
``/item?id=12`` on a variant's (:mod:`simweb.runtime.variants`).

An app declares the schemes as data, a factor of its ``variants.yaml`` whose options map
route prefixes of today's site to the variant's form::

    url_scheme:
      options:
        - {label: p}                                      # option 0: today's URLs
        - {label: product, urls: {/p/<int:pid>: /product/<pid>}}
        - {label: item, urls: {/p/<int:pid>: /item?id=<pid>}}

A rule maps every URL whose path *starts* with the canonical pattern (pages and form
actions under it too: ``/p/12/reviews`` is ``/product/12/reviews`` or
``/item/reviews?id=12``); a parameter is a whole path segment (``<int:name>`` digits only,
``<name>`` any segment), and goes to a path segment or to a query parameter of the
variant's form.

**The state keeps today's URLs.** Tabs, history entries, the request history, tasks,
effects and verifiers all read canonical URLs, so verdicts never depend on a variant's
wording. The variant's form exists only where a URL meets the browser:

* outgoing (:meth:`UrlScheme.to_wire`): every ``href``, ``action`` and ``formaction`` of a
  variant's pages, rewritten once in the templates' *source* when the variant's templates
  are built (a link whose URL is one Jinja expression, a data link such as a menu item's,
  goes through the ``variant_url`` filter, memoised); the observation's URL and the open
  tabs' (``Browser.display_url``); the served site's ``Location`` headers and start pages;
  local paths in the query (a ``next=`` the spec builds);
* incoming (:meth:`UrlScheme.to_canonical`): a link, form action or typed URL the browser
  resolves (against the page's URL in the variant's form), and the served site's request
  path and ``Referer``, are mapped back before routing.

**Slugs.** A segment of the variant's form may carry a slug of world data beside an
``<int:>`` parameter, the slug first or the id first::

    - {label: product-slug, urls: {/p/<int:pid>: /product/<slug:products.name>-<pid>}}
    - {label: hotel-slug, urls: {/hotels/<int:pid>: /hotel/<pid>-<slug:properties.name>}}

``/p/12`` is then ``/product/grey-wool-scarf-12``: the slug is column ``name`` of row 12 of
the world's table ``products`` (read whole once per world: ``WorldFile.column_values``), through :func:`slugify`
(ASCII, lower case, hyphens, at most :data:`SLUG_MAX` characters), memoised per scheme.
The world is the App's (:func:`simweb.runtime.variants.url_scheme` binds the scheme to it,
:meth:`UrlScheme.bind`); a row the world does not have (one made at run time) has no
slug, and its segment is the id alone (``/product/12``). A row renamed in the state keeps
the world's slug, as a real site keeps a permalink. In the templates' source the id's
segment becomes a ``variant_slug_<i>`` filter on the id's expression, memoised by id.
Incoming, a slug segment takes any slug text with the id: a URL with the right id and a
wrong or absent slug names the same page, which the in-process browser opens at its own
URL (the state keeps today's, which shows as the slug URL: what a browser shows after a
redirect), and the served site answers with a 301 to it (:meth:`UrlScheme.redirect`).

A Jinja expression that stands for a parameter in a template's URL is taken to write that
one segment (issues' ``/projects/{{ p.path }}/issues`` writes two, which a path-form rule
that keeps the parameters' order maps right); ``tests/test_variants_urls.py`` checks every
link and form action of every page the oracles of every scheme go through for one left in
today's form.

**A canonical URL on a variant site is a 404**, as a real site that uses other URLs
answers: ``goto('/p/12')`` on a site whose products are at ``/product/12`` shows "Page not
found" (the state keeps it as ``/_unmapped/p/12``, a path no route matches, which the
browser shows as ``/p/12``), so a goto on today's URL is no way around the variant. Its
``next=`` values alike: ``/login?next=/p/12`` signs in and lands on the 404.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import markupsafe

from .memo import BOUND, memoised

#: Where the state keeps a URL in today's form typed on a variant whose scheme moves it:
#: a prefix no route of any app matches (tested), so the request is a 404.
UNMAPPED = "/_unmapped"
_PARAM = re.compile(r"^<(?:(int|str|slug):)?([a-z_][a-z0-9_]*)>$")
_KINDS = {"int": re.compile(r"\d{1,12}"), "str": re.compile(r"[^/?#]+"), "slug": re.compile(r"[a-z0-9\-]+")}
# An attribute whose value is a URL the browser follows, in a template's source.
_URL_ATTR = re.compile(r'(\s(?:href|action|formaction)=")([^"]*)(")')
# A variant's path segment that is a slug of world data and an id: "<slug:products.name>-<pid>"
# ("grey-wool-scarf-12") or "<pid>-<slug:products.name>" ("12-grey-wool-scarf").
_IDENT = r"([a-z_][a-z0-9_]*)"
_SLUG_SEG = re.compile(rf"^<slug:{_IDENT}\.{_IDENT}>-<{_IDENT}>$|^<{_IDENT}>-<slug:{_IDENT}\.{_IDENT}>$")
# Such a segment as a browser requests it: any slug text (a wrong or absent one too) and the id.
_SLUG_ID = re.compile(r"(?:(.*)-)?(\d{1,12})", re.S)
_ID_SLUG = re.compile(r"(\d{1,12})(?:-(.*))?", re.S)
#: What a slug writes as one hyphen: every run of characters but ASCII letters and digits.
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
#: A slug's length bound (cut at a hyphen).
SLUG_MAX = 60


def slugify(text: str) -> str:
    """``text`` as a URL slug: ASCII (accents dropped), lower case, every run of other
    characters one hyphen, no hyphen at either end, at most :data:`SLUG_MAX` characters
    (cut at a word's end); "" when nothing is left. Deterministic: no locale, no table."""
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    s = _NOT_SLUG.sub("-", text.lower()).strip("-")
    if len(s) > SLUG_MAX:
        s = s[:SLUG_MAX + 1]
        s = s.rsplit("-", 1)[0] if "-" in s else s[:SLUG_MAX]
    return s


class UrlSchemeError(ValueError):
    """A malformed ``urls`` mapping in a variants file."""


@dataclass(frozen=True)
class Rule:
    """One prefix mapping: canonical path segments -> the variant's path and query."""

    canon: tuple[tuple[str, str], ...]       # (literal, "") or ("", kind:name)
    wire_path: tuple[tuple[str, str], ...]   # (literal, "") or ("", name)
    wire_query: tuple[tuple[str, str], ...]  # (key, param name)
    #: The variant's path segments that carry a slug of world data beside their parameter:
    #: (segment index, param name, world table, column, slug first).
    slugs: tuple[tuple[int, str, str, str, bool], ...] = ()

    @staticmethod
    def parse(canon: str, wire: str) -> Rule:
        if not canon.startswith("/") or not wire.startswith("/") or "#" in canon + wire or "?" in canon:
            raise UrlSchemeError(f"url rule {canon!r}: {wire!r}: two paths, the second may have a query")
        csegs: list[tuple[str, str]] = []
        kinds: dict[str, str] = {}
        for seg in canon[1:].split("/"):
            m = _PARAM.match(seg)
            if m:
                kinds[m.group(2)] = m.group(1) or "str"
                csegs.append(("", f"{kinds[m.group(2)]}:{m.group(2)}"))
            elif seg and "<" not in seg:
                csegs.append((seg, ""))
            else:
                raise UrlSchemeError(f"url rule {canon!r}: a segment is a literal or one <param>")
        path, _, query = wire.partition("?")
        wsegs: list[tuple[str, str]] = []
        used: list[str] = []
        slugs: list[tuple[int, str, str, str, bool]] = []
        for seg in path[1:].split("/"):
            m = _PARAM.match(seg)
            sm = _SLUG_SEG.match(seg)
            if m:
                wsegs.append(("", m.group(2)))
                used.append(m.group(2))
            elif sm:
                first = sm.group(1) is not None
                table, column, name = sm.group(1, 2, 3) if first else sm.group(5, 6, 4)
                if kinds.get(name) != "int":
                    raise UrlSchemeError(f"url rule {canon!r}: {wire!r}: a slug goes with an <int:> parameter")
                slugs.append((len(wsegs), name, table, column, first))
                wsegs.append(("", name))
                used.append(name)
            elif seg and "<" not in seg:
                wsegs.append((seg, ""))
            else:
                raise UrlSchemeError(f"url rule {wire!r}: a segment is a literal or one <param>")
        wquery: list[tuple[str, str]] = []
        for pair in query.split("&") if query else []:
            key, _, val = pair.partition("=")
            m = _PARAM.match(val)
            if not key or m is None:
                raise UrlSchemeError(f"url rule {wire!r}: a query is key=<param> pairs")
            wquery.append((key, m.group(2)))
            used.append(m.group(2))
        if sorted(used) != sorted(kinds) or not wsegs or wsegs[0][1]:
            raise UrlSchemeError(f"url rule {canon!r}: {wire!r}: every parameter once, and a literal first segment")
        return Rule(tuple(csegs), tuple(wsegs), tuple(wquery), tuple(slugs))

    def match_canon(self, segs: list[str]) -> dict[str, str] | None:
        """The parameters when path segments ``segs`` start with the canonical pattern."""
        if len(segs) < len(self.canon):
            return None
        out: dict[str, str] = {}
        for seg, (lit, param) in zip(segs, self.canon):
            if param:
                kind, _, name = param.partition(":")
                if not _KINDS[kind].fullmatch(seg):
                    return None
                out[name] = seg
            elif seg != lit:
                return None
        return out

    def match_wire(self, segs: list[str], pairs: list[tuple[str, str]]
                   ) -> tuple[dict[str, str], set[int], dict[str, str]] | None:
        """(parameters, indexes of the query pairs taken, the slug each slug segment was
        requested with: "" when absent) when a URL is in this rule's form. A slug segment
        takes any slug text with the id: which slug the page has is the scheme's to say."""
        if len(segs) < len(self.wire_path):
            return None
        out: dict[str, str] = {}
        given: dict[str, str] = {}
        for seg, (lit, name) in zip(segs, self.wire_path):
            if name:
                out[name] = seg
            elif seg != lit:
                return None
        for at, name, _table, _column, first in self.slugs:
            m = (_SLUG_ID if first else _ID_SLUG).fullmatch(segs[at])
            if m is None:
                return None
            out[name], given[name] = (m.group(2), m.group(1) or "") if first else (m.group(1), m.group(2) or "")
        taken: set[int] = set()
        for key, name in self.wire_query:
            i = next((i for i, (k, _) in enumerate(pairs) if k == key and i not in taken), None)
            if i is None:
                return None
            out[name] = pairs[i][1]
            taken.add(i)
        for _lit, param in self.canon:   # the values must be ones the canonical route takes
            if param:
                kind, _, name = param.partition(":")
                if not out.get(name) or not _KINDS[kind].fullmatch(out[name]):
                    return None
        return out, taken, given


def _split(url: str) -> tuple[str, str, str, str, str]:
    """(path, '?' or '', query, '#' or '', fragment)."""
    rest, hash_, frag = url.partition("#")
    path, q, query = rest.partition("?")
    return path, q, query, hash_, frag


class UrlScheme:
    """A variant's URL scheme: canonical <-> the variant's form (see the module docstring).

    A scheme with slug rules reads its slugs from ``world`` (an app's world, which answers
    ``column_values(table, column)``): :meth:`bind` gives the scheme of one world. An
    unbound scheme knows no slug, and writes such a segment as the id alone."""

    def __init__(self, rules: list[Rule], world: Any = None):
        self.rules = tuple(rules)
        self.world = world
        self._wire: dict[str, str] = {}
        self._canon: dict[str, str] = {}
        self._slugs: dict[tuple[str, str, str], str] = {}
        #: (table, column) -> the world's values by id (:meth:`_column`).
        self._columns: dict[tuple[str, str], dict[int, Any]] = {}
        #: The first literal segment of every canonical pattern: a cheap "maybe" test.
        self._heads = frozenset("/" + r.canon[0][0] for r in self.rules if r.canon[0][0])
        #: The first path segment of every canonical pattern (None when one starts with a
        #: parameter) and of every variant pattern (always a literal): a URL whose first
        #: segment is in neither is left as it is without trying each rule.
        self._canon_firsts: frozenset[str] | None = (
            frozenset(r.canon[0][0] for r in self.rules) if all(r.canon[0][0] for r in self.rules) else None)
        self._wire_firsts = frozenset(r.wire_path[0][0] for r in self.rules)
        #: Whether any rule writes a slug of world data.
        self.slugged = any(r.slugs for r in self.rules)
        #: Every slug segment's source (table, column, slug first), in rule order: the
        #: template filter ``variant_slug_<i>`` writes source ``i``'s segment for an id.
        self.slug_sources: tuple[tuple[str, str, bool], ...] = tuple(dict.fromkeys(
            (table, column, first) for r in self.rules for _i, _n, table, column, first in r.slugs))

    def bind(self, world: Any) -> UrlScheme:
        """This scheme reading its slugs from ``world`` (UrlSchemeError when the world has
        no table or column a slug rule names). Each slug source's column is read whole,
        once (``world.column_values``: one query per world and column, shared by every
        variant that reads it), so a step never queries the world for a slug."""
        bound = UrlScheme(list(self.rules), world)
        for rule in self.rules:
            for _i, _name, table, column, _first in rule.slugs:
                try:
                    bound._column(table, column)
                except (AttributeError, ValueError) as exc:
                    raise UrlSchemeError(f"url rule slug {table}.{column}: {exc}") from None
        return bound

    def _column(self, table: str, column: str) -> dict[int, Any]:
        """The world's ``table.column`` by id (read whole on first use: see :meth:`bind`)."""
        values = self._columns.get((table, column))
        if values is None:
            values = self._columns[(table, column)] = self.world.column_values(table, column)
        return values

    # ------------------------------------------------------------------ slugs
    def slug(self, table: str, column: str, rid: str) -> str:
        """The slug of row ``rid`` of world table ``table`` (its ``column``, through
        :func:`slugify`; memoised): "" for a row the world does not have (one created at
        run time, whose URL is the id alone) and on an unbound scheme. A row keeps the
        world's slug when the state renames it, as a real site keeps a permalink."""
        return memoised(self._slugs, (table, column, rid), self._slug)

    def _slug(self, key: tuple[str, str, str]) -> str:
        if self.world is None:
            return ""
        value = self._column(key[0], key[1]).get(int(key[2]))   # None: a row created at run time
        return slugify(value) if isinstance(value, str) else ""

    def _wire_path(self, rule: Rule, params: dict[str, str]) -> list[str]:
        """The variant's path segments of ``rule`` for ``params`` (slugs looked up)."""
        out = [params[n] if n else lit for lit, n in rule.wire_path]
        for i, name, table, column, first in rule.slugs:
            slug = self.slug(table, column, params[name])
            if slug:
                out[i] = f"{slug}-{params[name]}" if first else f"{params[name]}-{slug}"
        return out

    def redirect(self, url: str) -> str | None:
        """The variant's URL of the page ``url`` names with a wrong or absent slug (where a
        real site answers a permanent redirect); None for any other URL."""
        if not self.slugged or not url.startswith("/"):
            return None
        found = self._wire_rule(_split(url))
        if found is None:
            return None
        rule, (params, _taken, given), _segs = found
        if any(given[name] != self.slug(table, column, params[name]) for _i, name, table, column, _f in rule.slugs):
            return self.to_wire(self.to_canonical(url))
        return None

    def _wire_rule(self, parts: tuple[str, str, str, str, str]
                   ) -> tuple[Rule, tuple[Any, Any, Any], list[str]] | None:
        """The first rule whose variant form matches the split URL ``parts``, with its match
        and the path's segments (what a redirect and the mapping to today's form both read)."""
        path, _q, query, _h, _f = parts
        segs = path[1:].split("/")
        pairs = [(k, v) for k, _, v in (p.partition("=") for p in query.split("&"))] if query else []
        for rule in self.rules:
            hit = rule.match_wire(segs, pairs)
            if hit is not None:
                return rule, hit, segs
        return None

    # ------------------------------------------------------------------ outgoing
    def to_wire(self, url: Any) -> Any:
        """``url`` (today's form, as the state keeps it) as this variant shows it; anything
        else (another host, a relative reference, a non-string) unchanged."""
        if not isinstance(url, str) or not url.startswith("/"):
            return url
        hit = self._wire.get(url)   # the hit inline (URLs repeat): memoised() on a miss
        return hit if hit is not None else memoised(self._wire, url, self._to_wire)

    def _to_wire(self, url: str) -> str:
        if url.startswith(UNMAPPED + "/"):
            return url[len(UNMAPPED):]
        path, q, query, hash_, frag = _split(url)
        plain = self._no_paths(query)
        if not plain:
            query = self._map_values(query, self.to_wire)
        segs = path[1:].split("/")
        if self._canon_firsts is not None and segs[0] not in self._canon_firsts:   # no rule moves it
            if not plain:
                return path + q + query + hash_ + frag
            if segs[0] not in self._wire_firsts and len(self._canon) < BOUND:
                self._canon.setdefault(url, url)   # nor the way back (no rule's URL in either form)
            return url
        for rule in self.rules:
            params = rule.match_canon(segs)
            if params is None:
                continue
            rest = segs[len(rule.canon):]
            wpath = "/" + "/".join(self._wire_path(rule, params) + rest)
            if rule.wire_query:
                mine = "&".join(f"{k}={quote(params[n], safe='')}" for k, n in rule.wire_query)
                query, q = (mine + "&" + query if query else mine), "?"
            wire = wpath + q + query + hash_ + frag
            if plain and "%" not in url and len(self._canon) < BOUND:
                # the way back, known now: a link the page shows is the URL the browser
                # requests next (a moved URL without percent-escapes or local-path values in
                # its query maps back to exactly this one; tests/test_variants_urls.py)
                self._canon.setdefault(wire, url)
            return wire
        return url if plain else path + q + query + hash_ + frag

    # ------------------------------------------------------------------ incoming
    def to_canonical(self, url: str) -> str:
        """A URL the browser requests (the variant's form) as the state keeps it: today's
        form; today's form of a route this scheme moves is kept under :data:`UNMAPPED`
        (a 404, as a real site answers a URL it does not use)."""
        if not url.startswith("/"):
            return url
        hit = self._canon.get(url)
        return hit if hit is not None else memoised(self._canon, url, self._to_canonical)

    def _to_canonical(self, url: str) -> str:
        parts = _split(url)
        path, q, query, hash_, frag = parts
        first = path[1:].partition("/")[0]
        if first not in self._wire_firsts and (self._canon_firsts is not None and first not in self._canon_firsts):
            return path + q + self._map_values(query, self.to_canonical) + hash_ + frag   # no rule's URL
        found = self._wire_rule(parts)
        if found is not None:
            rule, (params, taken, _given), segs = found   # a wrong or absent slug: the page all the same (redirect)
            rest = segs[len(rule.wire_path):]
            cpath = "/" + "/".join([unquote(params[p.partition(":")[2]]) if p else lit for lit, p in rule.canon] + rest)
            if taken:
                query = "&".join(p for i, p in enumerate(query.split("&")) if i not in taken)
                q = "?" if query else ""
            return cpath + q + self._map_values(query, self.to_canonical) + hash_ + frag
        segs = path[1:].split("/")
        if any(r.match_canon(segs) is not None for r in self.rules):
            return UNMAPPED + url   # today's URL of a moved route: this site does not have it
        return path + q + self._map_values(query, self.to_canonical) + hash_ + frag

    @staticmethod
    def _no_paths(query: str) -> bool:
        """Whether ``query`` has no local-path value (``next=/p/12``, raw or percent-encoded)."""
        return not query or ("=/" not in query and "=%2F" not in query and "=%2f" not in query)

    @staticmethod
    def _map_values(query: str, fn: Any) -> str:
        """``query`` with its local-path values (``next=/p/12``, raw or percent-encoded)
        mapped by ``fn``, each written back in the form it came in."""
        if UrlScheme._no_paths(query):
            return query
        out = []
        for pair in query.split("&"):
            key, eq, val = pair.partition("=")
            if val.startswith("/"):
                val = fn(val)
            elif val[:3] in ("%2F", "%2f"):
                val = quote(fn(unquote(val)), safe="")
            out.append(key + eq + val)
        return "&".join(out)

    # ------------------------------------------------------------------ templates
    def rewrite_source(self, source: str) -> str:
        """A template's source with every URL attribute in the variant's form: a value
        with a literal path (``/p/{{ p.id }}/reviews``) is rewritten here, once; a value
        that is one Jinja expression goes through the ``variant_url`` filter at render."""
        return _URL_ATTR.sub(lambda m: m.group(1) + self._attr(m.group(2)) + m.group(3), source)

    def _attr(self, value: str) -> str:
        if "{" not in value:   # a literal URL: mapped now (one with a slug: by its world, at render)
            if value.startswith("/") and self._maybe(value):
                url = value.replace("&amp;", "&")
                if self._slug_rule(url):
                    return _filtered(value)
                return self.to_wire(url).replace("&", "&amp;")
            return value
        if not value.startswith("/"):
            if value.startswith("{{") and value.endswith("}}") and value.count("{{") == 1 and "{%" not in value:
                alts = _alternatives(value[2:-2])
                if alts is not None and all(self.to_wire(v) == v for v in alts):
                    return value   # 'qs(...)', "'/messages' if ... else '/messages/sent'": none moves
                return "{{ (" + value[2:-2].strip() + ")|variant_url }}"   # a data link (a menu item's)
            return _filtered(value) if value.startswith(("{{", "{%")) else value
        first = value[1:].split("/", 1)[0].split("?", 1)[0]
        if "{" in first:
            m = _FIRST_EXPR.match(value)
            alts = _alternatives(m.group(1)) if m else None
            if alts is not None and not any(self._maybe("/" + v) for v in alts):
                return value   # "/{{ 'unsave' if saved else 'save' }}": no alternative moves
            return _filtered(value)   # '/{{ kind }}/{{ id }}/vote': known at render only
        if not self._maybe("/" + first):
            return value              # a literal head no rule moves ('/c/{{ name }}/subscribe')
        return self._static(value) or _filtered(value)

    def _slug_rule(self, url: str) -> bool:
        """Whether the rule that moves canonical ``url`` writes a slug."""
        segs = _split(url)[0][1:].split("/")
        rule = next((r for r in self.rules if r.match_canon(segs) is not None), None)
        return rule is not None and bool(rule.slugs)

    def _maybe(self, url: str) -> bool:
        return any(url == h or url.startswith((h + "/", h + "?", h + "#")) for h in self._heads)

    def _static(self, value: str) -> str | None:
        """``value`` (a literal head, Jinja parameters) in the variant's form, written in
        the source; None when only the rendered value can tell (then it is filtered)."""
        blocks = _BLOCK.findall(value)
        tokens = [f"\x00{i}\x00" for i in range(len(blocks))]
        counter = iter(tokens)
        flat = _BLOCK.sub(lambda m: next(counter), value)
        for rule in self.rules:
            cut = _match_prefix(rule, flat, blocks)
            if cut is None:
                continue
            params, end = cut
            rest = flat[end:]
            wsegs = [params[n] if n else lit for lit, n in rule.wire_path]
            for i, name, table, column, first in rule.slugs:   # the slug is the world's: the id's filter at render
                ref = _TOKEN.fullmatch(params[name])
                expr = blocks[int(ref.group(1))][2:-2].strip() if ref else repr(params[name])
                wsegs[i] = f"{{{{ ({expr})|variant_slug_{self.slug_sources.index((table, column, first))} }}}}"
            wpath = "/" + "/".join(wsegs)
            if rule.wire_query:
                tail = rest.partition("#")[0]
                if "?" in tail or any("\x00" in seg and not (_TOKEN.fullmatch(seg) and blocks[int(seg[1:-1])].startswith("{{"))
                                      for seg in tail.split("/")):
                    return None   # a query (or what may write one) at render: merged then
                path, q, query, hash_, frag = _split(rest)
                mine = "&amp;".join(f"{k}={params[n]}" for k, n in rule.wire_query)
                rest = path + "?" + (mine + "&amp;" + query if query else mine) + hash_ + frag
            out = wpath + rest
            for tok, block in zip(tokens, blocks):
                out = out.replace(tok, block)
            return out
        return None


#: Jinja's expressions and statements in an attribute value.
_BLOCK = re.compile(r"{{.*?}}|{%.*?%}", re.S)


_TOKEN = re.compile(r"\x00(\d+)\x00")
_SEGMENT = re.compile(r"\x00(\d+)\x00|[^/?#\x00]+")


#: "{{ expr }}" as a URL's first segment.
_FIRST_EXPR = re.compile(r"/{{(.*?)}}", re.S)
_CONDITIONAL = re.compile(r"\s*'([^'\\{}]*)'\s+if\s+[^'\"]+\s+else\s+'([^'\\{}]*)'\s*")
_QS = re.compile(r"\s*qs\([^'\"]*(?:'[^'\"]*'[^'\"]*)*\)\s*(?:or\s+'([^'\\{}]*)'\s*)?")


def _alternatives(expr: str) -> list[str] | None:
    """The values a template expression can write, when it is one of two literals
    (``'a' if cond else 'b'``) or a query (``qs(...)``, ``or 'literal'``); else None."""
    m = _CONDITIONAL.fullmatch(expr)
    if m:
        return [m.group(1), m.group(2)]
    m = _QS.fullmatch(expr)
    if m:
        return ["?"] + ([m.group(1)] if m.group(1) is not None else [])
    return None


def _filtered(value: str) -> str:
    """An attribute value mapped when rendered (a URL its template writes in parts)."""
    return "{% filter variant_url %}" + value + "{% endfilter %}"


def _match_prefix(rule: Rule, flat: str, blocks: list[str]) -> tuple[dict[str, str], int] | None:
    """Whether a template value (Jinja blocks as tokens) starts with the rule's canonical
    pattern: (each parameter's source text, where the matched prefix ends), or None. A
    parameter is a literal segment or one ``{{ }}`` expression; what follows the prefix
    (more segments, a query, ``{% if %}`` blocks) is kept as written."""
    pos = 0
    out: dict[str, str] = {}
    for lit, param in rule.canon:
        if not flat.startswith("/", pos):
            return None
        pos += 1
        m = _SEGMENT.match(flat, pos)
        if m is None:
            return None
        seg = m.group(0)
        if param:
            if m.group(1) is not None:
                if not blocks[int(m.group(1))].startswith("{{"):
                    return None
            elif not _KINDS[param.partition(":")[0]].fullmatch(seg):
                return None
            out[param.partition(":")[2]] = seg
        elif seg != lit:
            return None
        pos = m.end()
        nxt = _TOKEN.match(flat, pos)
        if pos < len(flat) and flat[pos] not in "/?#" and not (nxt and blocks[int(nxt.group(1))].startswith("{%")):
            return None   # the segment goes on ('{{ a }}{{ b }}', '12abc'): not one parameter
    return out, pos


def parse_urls(app: str, factor: str, index: int, raw: Any) -> tuple[tuple[str, str], ...]:
    """An option's ``urls`` mapping (canonical prefix -> the variant's form), checked."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise UrlSchemeError(f"{app} variants: factor {factor!r} option {index}: urls maps paths to paths")
    for k, v in raw.items():
        try:
            Rule.parse(k, v)
        except UrlSchemeError as exc:
            raise UrlSchemeError(f"{app} variants: factor {factor!r} option {index}: {exc}") from None
    return tuple(raw.items())


def template_filters(scheme: UrlScheme) -> dict[str, Any]:
    """The scheme's Jinja filters: ``variant_url`` (:func:`template_filter`) and, for each
    slug source ``i`` (:attr:`UrlScheme.slug_sources`), ``variant_slug_<i>``: a slug
    rule's segment for an id (``12`` -> ``grey-scarf-12``), which the templates' source
    writes where the id is (:meth:`UrlScheme.rewrite_source`); memoised by the id."""
    out = {"variant_url": template_filter(scheme)}
    for i, source in enumerate(scheme.slug_sources):
        out[f"variant_slug_{i}"] = _slug_filter(scheme, *source)
    return out


def _slug_filter(scheme: UrlScheme, table: str, column: str, first: bool) -> Any:
    """The ``variant_slug_<i>`` filter of one slug source (see :func:`template_filters`)."""
    def segment(rid: str) -> str:
        if not _KINDS["int"].fullmatch(rid):
            return rid   # not an id: written as it is (as a rule without a slug writes it)
        slug = scheme.slug(table, column, rid)
        return rid if not slug else f"{slug}-{rid}" if first else f"{rid}-{slug}"

    by_id: dict[int, str] = {}

    def variant_slug(value: Any) -> str:
        if type(value) is int:   # the usual case, a row's id: one dict lookup
            hit = by_id.get(value)
            return hit if hit is not None else memoised(by_id, value, lambda v: segment(str(v)))
        return segment(str(value))
    return variant_slug


def template_filter(scheme: UrlScheme) -> Any:
    """The ``variant_url`` Jinja filter: a URL (or, in a ``{% filter %}`` block, an
    attribute's escaped text) in the variant's form."""
    def variant_url(value: Any) -> Any:
        if isinstance(value, markupsafe.Markup):   # a {% filter %} block's escaped text
            if "&" not in value:   # nothing escaped in it (the usual path): no round trip
                return markupsafe.Markup(scheme.to_wire(str(value)))
            return markupsafe.Markup(markupsafe.escape(scheme.to_wire(value.unescape())))
        return scheme.to_wire(value)
    return variant_url


def scheme(rules: tuple[tuple[str, str], ...]) -> UrlScheme | None:
    """The scheme of a variant's rules (None for today's URLs)."""
    return UrlScheme([Rule.parse(k, v) for k, v in rules]) if rules else None


__all__ = ["SLUG_MAX", "UNMAPPED", "Rule", "UrlScheme", "UrlSchemeError", "parse_urls", "scheme", "slugify",
           "template_filter", "template_filters"]
