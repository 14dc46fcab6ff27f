"""An app at run time: spec + world + functions + templates, and the request cycle.

Both the in-process browser and the Flask server drive an app through the same two
calls, so they follow the same transitions:

    navigate(state, url)          a GET: resolve the page, run its requirements (404,
                                  403, redirect to sign-in...), update the tab, render
    submit(state, url, form)      a POST: fire the spec event (typed params, guards,
                                  updates), return where the site redirects to

``render(state)`` is a pure function of the state: the same state gives the same HTML.
"""
from __future__ import annotations

import html as html_lib
import importlib
import importlib.metadata
import io
import re
import types
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import jinja2
import jinja2.compiler
import jinja2.nodes
import markupsafe

from ..core.expr import ExprRuntimeError
from ..core.functions import Ctx, FunctionTable, using
from ..core.kits import TEMPLATES as KIT_TEMPLATES
from ..core.machine import ControlMachine
from ..core.spec import Event, ExprErrorAtRuntime, PageSpec, ParamError, Spec, load_spec
from ..core.specmodel import Message
from ..core.state import STATE_FORMAT, StateValidator, deep_copy, new_browser
from ..core.updates import apply_updates
from ..core.urls import safe_href
from ..judging.decompose import TaskTable
from . import variant_confirm, variant_flows, variant_login, variant_pages, variant_steps
from .definition import AppDefinition, AppLimits, _import  # noqa: F401  (simweb.app's names before definition.py)
from .history import ORIGINS, record, sealed
from .history import begin as begin_history
from .memo import memoised
from .variants import (
    VariantError,
    confirm_step,
    field_errors,
    form_steps,
    login_wall,
    pagination,
    shown_message,
    shown_url,
    state_variant,
)
from .variants import catalogue as variant_catalogue
from .variants import jinja_for as variant_jinja
from .variants import page_context as variant_page
from .variants import policy as variant_policy
from .variants import sign_in as variant_sign_in
from .variants import sign_in_href as variant_sign_in_href
from .variants import url_scheme as variant_url_scheme
from .variants import words as variant_words

MAX_REDIRECTS = 5
#: Entries one tab's history keeps (Chromium and Firefox both keep 50).
MAX_HISTORY = 50
MAX_TIMERS_PER_REQUEST = 1000   # a timer that keeps rescheduling itself cannot hang a request


def load_app_spec(definition: AppDefinition, table: FunctionTable) -> Spec:
    """An app's compiled spec: expressions may call the functions of ``table`` (their read
    sets go into the events'), and ``required: columns`` in the runtime schema lists the
    columns of the world's models (the world class's ``ROW_MAPS``; importing it loads no data)."""
    functions = table.merged_with_builtins()
    row_maps = getattr(_import(definition.world), "ROW_MAPS", {})
    return load_spec(definition.spec_path(), table.callables(), function_reads={n: f.reads for n, f in functions.items()},
                     columns={t: rows.names for t, rows in row_maps.items()})


try:   # markupsafe's C escaper without the Markup wrapping (markupsafe >= 2.1)
    from markupsafe import _escape_inner
except ImportError:  # pragma: no cover - an older markupsafe: its public escape
    def _escape_inner(s: str, /) -> str:
        return str(markupsafe.escape(s))


def _escape_output(value: Any, _str: type = str, _int: type = int, _inner: Any = _escape_inner) -> str:
    """What ``{{ x }}`` emits under autoescape, as markupsafe.escape computes it, but as a
    plain str: the compiled template only joins the pieces (a macro or block wraps its
    result in Markup itself), and building a Markup object for each of the hundreds of
    values on a page costs more than escaping them."""
    t = type(value)
    if t is _str:
        return _inner(value)
    if t is _int:   # ids and counts: digits need no escaping, and an int has no __html__
        return _str(value)
    html = getattr(value, "__html__", None)
    if html is not None:
        return html()
    return _inner(_str(value))


class _Template(jinja2.Template):
    """A template whose compiled code calls :func:`_escape_output` for ``{{ x }}``."""

    @classmethod
    def _from_namespace(cls, environment: jinja2.Environment, namespace: Any, globals: Any) -> jinja2.Template:
        namespace["escape"] = _escape_output   # the name the compiled module imported
        return super()._from_namespace(environment, namespace, globals)


#: Callables that cannot ask for Jinja's context or environment: a builtin, or a plain
#: function without ``jinja_pass_arg`` (what ``pass_context`` and its siblings set).
_PLAIN_CALLS = (types.BuiltinFunctionType,)
_Macro = jinja2.runtime.Macro
_MISSING = jinja2.runtime.missing
#: The macro shortcut reads Macro's private fields (``_func``, ``_argument_count``) as
#: Jinja 3.1 defines them; any other Jinja takes its own path.
_MACRO_SHORTCUT = importlib.metadata.version("jinja2").startswith("3.1.")


class _Context(jinja2.runtime.Context):
    """Jinja's render context with a shorter ``call``: a template calls app functions and
    macros hundreds of times a page, and Jinja's own call inspects each callable twice for
    a context argument, and binds a macro's arguments by name even when they all came by
    position. The result is the same as Jinja's."""

    def call(self, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        t = type(obj)
        if t is _Macro and _MACRO_SHORTCUT:
            n = obj._argument_count
            if len(kwargs) > 1 or len(args) > n or obj.caller or obj.explicit_caller or obj.catch_kwargs \
                    or obj.catch_varargs:
                return super().call(obj, *args, **kwargs)
            kwargs.pop("_block_vars", None)
            kwargs.pop("_loop_vars", None)
            if kwargs:
                return super().call(obj, *args, **kwargs)
            # Macro.__call__ with positional arguments only: the missing ones take their
            # defaults inside the macro; the output is markup when autoescaping.
            try:
                rv = obj._func(*args, *((_MISSING,) * (n - len(args))))
            except StopIteration:
                return self._stopped()
            return markupsafe.Markup(rv) if self.eval_ctx.autoescape else rv
        if t in _PLAIN_CALLS or (t is types.FunctionType and not hasattr(obj, "jinja_pass_arg")):
            kwargs.pop("_block_vars", None)
            kwargs.pop("_loop_vars", None)
            try:
                return obj(*args, **kwargs)
            except StopIteration:
                return self._stopped()
        return super().call(obj, *args, **kwargs)

    def _stopped(self) -> Any:
        return self.environment.undefined("value was undefined because a callable raised a StopIteration exception")


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _CodeGenerator(jinja2.compiler.CodeGenerator):
    """Jinja's code generator, except that ``x.key`` and ``x['key']`` on a template variable
    read a dict's key inline: ``(x['key'] if type(x) is dict and 'key' in x else
    environment.getattr(x, 'key'))``. A page does this hundreds of times, and the method
    call costs several times the lookup. The value is the environment's in every case
    (a dict holding the key gives the key, which is what the dict-first lookup returns);
    any other operand, and async templates, compile as Jinja compiles them."""

    def _name_text(self, node: jinja2.nodes.Node, frame: Any) -> str:
        """The code for ``node`` (written to a buffer, not the stream)."""
        self.write("")   # pending newlines and indentation go to the real stream first
        real, self.stream = self.stream, io.StringIO()
        try:
            self.visit(node, frame)
            return self.stream.getvalue()
        finally:
            self.stream = real

    def _key_lookup(self, node: jinja2.nodes.Node, key: str, method: str, frame: Any) -> None:
        text = self._name_text(node, frame)
        k = repr(key)
        if _PLAIN_NAME.match(text):
            self.write(f"({text}[{k}] if type({text}) is dict and {k} in {text} else environment.{method}({text}, {k}))")
        else:
            self.write(f"environment.{method}({text}, {k})")

    @jinja2.compiler.optimizeconst
    def visit_Getattr(self, node: jinja2.nodes.Getattr, frame: Any) -> None:
        if self.environment.is_async or not isinstance(node.node, jinja2.nodes.Name):
            return super().visit_Getattr(node, frame)
        self._key_lookup(node.node, node.attr, "getattr", frame)

    @jinja2.compiler.optimizeconst
    def visit_Getitem(self, node: jinja2.nodes.Getitem, frame: Any) -> None:
        arg = node.arg
        if (self.environment.is_async or not isinstance(node.node, jinja2.nodes.Name)
                or not isinstance(arg, jinja2.nodes.Const) or type(arg.value) is not str):
            return super().visit_Getitem(node, frame)
        self._key_lookup(node.node, arg.value, "getitem", frame)


class _TemplateEnvironment(jinja2.Environment):
    """Jinja with dict keys first: pages render JSON data, so ``p.items`` is the key
    'items' when there is one (not the dict method), and the common lookup skips
    Jinja's attribute-then-item dance and its AttributeError."""

    template_class = _Template
    context_class = _Context
    code_generator_class = _CodeGenerator

    def make_globals(self, d: Any) -> Any:
        """A template's globals as one flat dict. Jinja chains them to the environment's
        (a ChainMap), and every render copies them into its context key by key through
        ChainMap's Python lookups; an app sets its globals once, before any template loads."""
        return {**self.globals, **(d or {})}

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict:
            try:
                return obj[attribute]
            except KeyError:
                pass   # then methods such as .get(), as Jinja normally resolves them
        return super().getattr(obj, attribute)


def _lf(value: Any) -> Any:
    """A form value with CRLF line breaks as LF (a list item by item)."""
    if type(value) is str:
        return value.replace("\r\n", "\n") if "\r" in value else value
    if isinstance(value, list):
        return [_lf(v) for v in value]
    return value


def _same(value: Any) -> Any:
    """The ``site_message`` filter on today's site: the message as it is."""
    return value


@dataclass
class Response:
    """The outcome of one request."""

    status: int
    url: str
    page: str
    location: str | None = None   # a redirect (POST responses always redirect)
    error: str | None = None      # a message the site showed (guard failure, bad field)
    event: str | None = None
    html: str | None = None


class App:
    """One app loaded for one world: shared by every env and fork of that world."""

    def __init__(self, definition: AppDefinition, seed: int = 0, size: int | None = None, *,
                 progress: bool = False):
        self.definition = definition
        self.name = definition.name
        self.size = size or definition.default_size
        self.seed = seed
        table: FunctionTable = _import(definition.functions)
        self.function_table = table
        self.callables = table.callables()
        self.spec: Spec = load_app_spec(definition, table)
        self.machine = ControlMachine(self.spec)
        self.world = _import(definition.world).load(seed=seed, size=self.size, progress=progress)
        self.validator = StateValidator(self.spec.runtime_schema)
        self.jinja = self._make_jinja()
        self._entity = self.callables["entity"]

    # ------------------------------------------------------------------ set-up
    def _make_jinja(self) -> jinja2.Environment:
        folder = resources.files(self.definition.package) / "templates"
        env = _TemplateEnvironment(
            # The app's templates first; a kit's (login.html...) where the app has none.
            loader=jinja2.FileSystemLoader([str(folder), str(KIT_TEMPLATES)]),
            autoescape=True,               # all user text is escaped
            auto_reload=False,             # templates compile once, never on the hot path
            cache_size=-1,
            undefined=jinja2.ChainableUndefined,
            trim_blocks=True, lstrip_blocks=True,
        )
        env.globals.update(self.callables)
        env.globals["kits"] = self.spec.kits
        env.filters.update(self.function_table.filters)
        # URLs from user content or a restored state go through this in every app.
        env.filters["safe_href"] = safe_href
        # A message an app's function wrote, as a template shows it: today's text here, the
        # variant's words on a site variant (simweb.runtime.variants.jinja_for).
        env.filters["site_message"] = _same
        # Compile every template now, once per app: a page's first visit would otherwise pay
        # Jinja's compile (several ms a template) inside a step or a served request.
        for name in env.list_templates(extensions=["html"]):
            env.get_template(name)
        return env

    @cached_property
    def tasks(self) -> dict[str, Any]:
        """Task templates by id ('shopping/<template>'); sub-task ids
        ('shopping/buy_product.1') resolve too, but only parents are listed."""
        return TaskTable(self, _import(self.definition.tasks))

    @cached_property
    def verifiers(self) -> Any:
        return _import(self.definition.verifiers)

    # ------------------------------------------------------------------ state
    def initial_state(self, seed: int = 0, variant: int = 0) -> dict:
        """A fresh state: empty runtime overlay, one blank tab, the clock at its start, an
        empty history (:mod:`simweb.history`); ``variant`` (:mod:`simweb.variants`) is kept
        in ``meta.variant``, absent for today's site."""
        spec = self.spec
        state = {
            "world": {"app": self.name, "seed": self.seed, "size": self.size, "hash": self.world.hash},
            "runtime": deep_copy(spec.runtime_initial),
            "browser": new_browser(),
            "meta": {
                "format": STATE_FORMAT, "app": self.name, "spec_version": spec.version, "spec_hash": spec.hash,
                "world_hash": self.world.hash,
                "clock": spec.clock["start_day"] * 86400 + spec.clock["start_second"],
                "step": 0, "requests": 0, "rng": {"seed": int(seed), "counter": 0}, "task": None,
            },
        }
        if variant:
            state["meta"]["variant"] = variant_catalogue(self).check(variant)
        begin_history(state, ORIGINS[1])
        return state

    def check_state(self, state: Any) -> None:
        """Refuse a state of another app, world or spec version, or one off the schema."""
        from ..core.state import StateError

        if not isinstance(state, dict) or not isinstance(state.get("meta"), dict):
            raise StateError("not a simweb state (no 'meta' object)")
        meta = state["meta"]
        if meta.get("app") != self.name:
            raise StateError(f"state is for app {meta.get('app')!r}, not {self.name!r}")
        if meta.get("spec_hash") != self.spec.hash:
            raise StateError(f"state was made with another {self.name} spec (hash {str(meta.get('spec_hash'))[:12]}…, "
                             f"installed {self.spec.hash[:12]}…)")
        world = state.get("world") or {}
        for where, got in (("world.hash", world.get("hash")), ("meta.world_hash", meta.get("world_hash"))):
            if got != self.world.hash:
                raise StateError(f"state belongs to another world ({where} {str(got)[:12]}…, this world "
                                 f"{self.world.hash[:12]}…: seed {self.seed}, size {self.size})")
        self.validator.check(state)
        if "variant" in meta:
            try:
                variant_catalogue(self).check(meta["variant"])
            except VariantError as exc:
                raise StateError(f"invalid state at $.meta.variant: {exc}") from None
        # What a schema cannot say: indexes must point inside their lists.
        browser = state["browser"]
        if "confirm" in browser and not confirm_step(self, state):
            raise StateError("invalid state at $.browser.confirm: a submission pending confirmation on a site "
                             "without a confirmation step")
        if "steps" in browser:
            if not form_steps(self, state):
                raise StateError("invalid state at $.browser.steps: a form held for its second page on a site "
                                 "without multi-step forms")
            hit = self.spec.match_event(urlsplit(browser["steps"]["url"]).path)
            if hit is None or hit[0].name not in variant_catalogue(self).steppables:
                raise StateError("invalid state at $.browser.steps.url: not the address of a multi-step form")
        if browser["active"] >= len(browser["tabs"]):
            raise StateError(f"invalid state at $.browser.active: tab {browser['active']} of {len(browser['tabs'])}")
        for i, tab in enumerate(browser["tabs"]):
            if tab["cursor"] >= len(tab["history"]):
                raise StateError(f"invalid state at $.browser.tabs[{i}].cursor: {tab['cursor']} is past the history")

    def policy(self, state: dict, name: str) -> Any:
        """The value of the site's policy ``name`` on the site ``state`` renders as (its
        variant's; today's on variant 0): :func:`simweb.runtime.variants.policy`, what the
        spec's ``site_policy('name')`` and the app's functions read."""
        return variant_policy(self, state["meta"].get("variant", 0), name)

    def site_policies(self, variant: int = 0) -> dict[str, Any]:
        """Every policy the app declares -> its value on site ``variant`` (today's on
        variant 0): what task templates (simweb.judging.tasks, a wing below this one) draw
        their instances under."""
        return variant_catalogue(self).policies(variant)

    def site_sign_in(self, variant: int = 0) -> str:
        """When site ``variant`` asks to sign in ("": tasks start signed in, today's; "late"
        or "early": they start signed out; simweb.runtime.variant_login): what task
        templates (simweb.judging.tasks) draw their instances under."""
        return variant_sign_in(self, variant)

    # ------------------------------------------------------------------ expression env
    def _env(self, state: dict, url: str, query: dict[str, Any]) -> dict[str, Any]:
        clock = state["meta"]["clock"]
        return {"rt": state["runtime"], "browser": state["browser"], "meta": state["meta"],
                "user": state["browser"]["user"], "now": clock, "today": clock // 86400, "url": url,
                "query": query}

    def _ctx(self, state: dict, url: str) -> Ctx:
        return Ctx(world=self.world, state=state, app=self, url=url)

    # ------------------------------------------------------------------ pages
    def _resolve(self, state: dict, url: str) -> tuple[PageSpec | None, dict[str, Any], int, str | None, str | None]:
        """(page, template vars, status, error message, redirect) for a GET of ``url``."""
        parts = urlsplit(url)
        hit = self.spec.match_page(parts.path)
        if hit is None:
            confirm = variant_confirm.parse_path(parts.path) if "variant" in state["meta"] else None
            if confirm is not None and not confirm[1] and confirm_step(self, state) not in ("", variant_confirm.INLINE):
                return self._confirm_resolve(state, url, confirm[0])
            token = variant_steps.parse_path(parts.path) if "variant" in state["meta"] else None
            if token is not None and form_steps(self, state):
                return self._steps_resolve(state, url, token)
            return None, {}, 404, "Page not found", None
        page, args = hit
        if "variant" in state["meta"]:   # a login wall (simweb.runtime.variant_login): before anything else
            open_pages = login_wall(self, state)
            if open_pages is not None and variant_login.walled(page.name, state["browser"]["user"], open_pages):
                return page, {}, 303, None, variant_login.login_url(url)
        raw = parse_qs(parts.query, keep_blank_values=True)
        query: dict[str, Any] = {}
        for name, param in page.query.items():
            try:
                query[name] = param.parse(raw.get(name))
            except ParamError:
                query[name] = param.default   # a site ignores a malformed query value
        env = self._env(state, url, query)
        env.update(args)
        env["page"] = page.name
        # the env before the loads, kept only for a cumulative list's later page (its loads run again)
        cumulative = ("variant" in state["meta"] and pagination(self, state) in variant_pages.CUMULATIVE
                      and variant_pages.later_page(env))
        base = dict(env) if cumulative else env
        for name, expr in page.load:
            env[name] = expr(env)
        for check in page.require:
            if not check.cond(env):
                if check.redirect is not None:
                    return page, env, 303, None, check.redirect(env)
                return page, env, check.status, check.error(env) if check.error else "Not allowed", None
        if cumulative:   # "Load more": ?page=n lists pages 1..n (simweb.runtime.variant_pages)
            variant_pages.accumulate(page.load, base, env)
        for name, expr in self.spec.globals:
            env[name] = expr(env)
        return page, env, 200, None, None

    @cached_property
    def _confirm_page(self) -> PageSpec:
        """The confirmation page of a site variant's confirmation step (an engine page: no
        route of the spec; simweb.runtime.variant_confirm)."""
        title = Message("confirm", (lambda env: env["confirm"]["heading"], " · " + self.spec.title),
                        frozenset(), frozenset())
        return PageSpec(variant_confirm.PAGE, variant_confirm.PREFIX + "<int:token>",
                        re.compile(re.escape(variant_confirm.PREFIX) + r"[0-9]+$"), {}, variant_confirm.TEMPLATE,
                        title, {}, [], [], [], [])

    def _confirm_resolve(self, state: dict, url: str, token: int
                         ) -> tuple[PageSpec | None, dict[str, Any], int, str | None, str | None]:
        """The confirmation page ``token`` (what :meth:`_resolve` returns): the pending
        submission's summary and buttons when it is the one pending for the signed-in user,
        else a page saying nothing is waiting."""
        heading, yes, no = variant_confirm.STYLES[confirm_step(self, state)]
        info: dict[str, Any] = {"heading": heading, "yes": yes, "no": no, "action": variant_confirm.page_url(token),
                                "pending": False, "summary": "", "fields": [], "base": "base.html"}
        pending = state["browser"].get("confirm")
        if pending is not None and pending["token"] == token and pending["user"] == state["browser"]["user"]:
            hit = self.spec.match_event(urlsplit(pending["url"]).path)
            decl = variant_catalogue(self).confirmables.get(hit[0].name) if hit else None
            if hit is not None and decl is not None:
                summary = variant_confirm.summary(self, state, decl, hit[0], hit[1], pending)
                info.update(pending=True, summary=shown_message(self, state, summary),
                            fields=self._confirm_fields(state, decl, pending), base=decl.base)
        env = self._env(state, url, {})
        env["page"] = variant_confirm.PAGE
        env["confirm"] = info
        for name, expr in self.spec.globals:
            env[name] = expr(env)
        return self._confirm_page, env, 200, None, None

    def _steps_page(self, page: PageSpec | None) -> PageSpec:
        """The second page of a multi-step form on ``page`` (its template and title, under
        the engine's page name and address; None: the page saying nothing is held)."""
        pages: dict[str, PageSpec] = self.__dict__.setdefault("_steps_pages", {})
        key = page.name if page is not None else ""
        hit = pages.get(key)
        if hit is None:
            title = page.title if page is not None else Message(
                "steps", ("Nothing to continue · " + self.spec.title,), frozenset(), frozenset())
            # the page's query parameters too: its title's shapes read their values (an enum's
            # value, such as a kind of post, is the spec's word: variants.page_context)
            hit = pages[key] = PageSpec(variant_steps.PAGE, variant_steps.PREFIX + "<int:token>",
                                        re.compile(re.escape(variant_steps.PREFIX) + r"[0-9]+$"), {},
                                        page.template if page is not None else variant_steps.TEMPLATE, title,
                                        page.query if page is not None else {}, [], [], [], [])
        return hit

    def _steps_resolve(self, state: dict, url: str, token: int
                       ) -> tuple[PageSpec | None, dict[str, Any], int, str | None, str | None]:
        """The second page of the held form ``token`` (what :meth:`_resolve` returns): the
        form's own page (its requirements too), whose form :meth:`_render_resolved` shows
        with the second page's fields; else a page saying nothing is held."""
        entry = variant_steps.held(state, token)
        if entry is None:
            env = self._env(state, url, {})
            env["page"] = variant_steps.PAGE
            for name, expr in self.spec.globals:
                env[name] = expr(env)
            return self._steps_page(None), env, 200, None, None
        page, env, status, error, location = self._resolve(state, entry["back"])
        if page is None or status != 200 or location is not None:
            return page, env, status, error, location
        return self._steps_page(page), env, 200, None, None

    def _split_forms(self, state: dict, tab: dict, html: str) -> str:
        """A page of a variant with multi-step forms: each declared form as its first page
        shows it, or (the tab on a held form's second page) as its second page shows it."""
        style = form_steps(self, state)
        if not style or "<form" not in html:
            return html
        cat = variant_catalogue(self)
        pages: frozenset[str] | None = self.__dict__.get("_steps_sources")
        if pages is None:   # the pages a declared form can be sent from (its event's sources)
            pages = self.__dict__["_steps_sources"] = frozenset(
                src for name in cat.steppables if name in self.spec.events for src in self.spec.events[name].sources)
        if tab["page"].partition(":")[0] not in pages | {variant_steps.PAGE}:
            return html
        variant = state["meta"]["variant"]
        scheme = variant_url_scheme(self, variant)
        # A form's declaration by its action, per variant (its URL scheme): a pure function
        # of the two, asked for every POST form of every page shown (bounded memo)
        # (False: no declaration; the memo keeps no None)
        decls: dict[tuple[int, str], variant_steps.Steppable | Literal[False]] | None = self.__dict__.get("_steps_decls")
        if decls is None:
            decls = self.__dict__["_steps_decls"] = {}

        def find(key: tuple[int, str]) -> variant_steps.Steppable | Literal[False]:
            path = urlsplit(html_lib.unescape(key[1])).path
            if scheme is not None:
                path = urlsplit(scheme.to_canonical(path)).path
            hit = self.spec.match_event(path)
            return cat.steppables.get(hit[0].name, False) if hit is not None else False

        def declared(action: str) -> variant_steps.Steppable | None:
            key = (variant, action)
            found = decls[key] if key in decls else memoised(decls, key, find, 4096)
            return found or None

        second = None
        entry = state["browser"].get("steps")
        if tab["page"] == variant_steps.PAGE and entry is not None and tab["url"] == variant_steps.page_url(
                entry["token"]) and entry["user"] == state["browser"]["user"]:
            event = self.spec.match_event(urlsplit(entry["url"]).path)
            # the spec's labels, in the variant's words (the values as sent)
            labels = {n: variant_words(self, state_variant(state), p.label or n)
                      for n, p in event[0].params.items()} if event else {}
            shown = [(labels.get(k, k), ", ".join(v) if isinstance(v, list) else v)
                     for k, v in entry["form"].items() if v not in ("", [])]
            wire = scheme.to_wire if scheme is not None else (lambda u: u)
            second = (entry["token"], wire(entry["back"]), wire(entry["url"]), shown)
        refill = None
        if entry is not None and tab["url"] == entry["back"] and entry["user"] == state["browser"]["user"]:
            # the form's own page while its first fields are held (the second page's Back):
            # they show what was sent, as a site keeping the wizard in the session does
            refill = ((scheme.to_wire if scheme is not None else (lambda u: u))(entry["url"]), entry["form"])
        return variant_steps.split_forms(html, declared, style, second, refill)

    def _confirm_panel(self, state: dict, tab: dict) -> markupsafe.Markup | str:
        """The inline confirmation panel a page shows: the pending submission's, on the page
        it was sent from, for the user who sent it ("" on any other page)."""
        pending = state["browser"].get("confirm")
        if pending is None or pending["user"] != state["browser"]["user"] or tab["url"].partition("#")[0] != pending["back"]:
            return ""
        hit = self.spec.match_event(urlsplit(pending["url"]).path)
        decl = variant_catalogue(self).confirmables.get(hit[0].name) if hit else None
        if hit is None or decl is None:
            return ""
        heading, yes, no = variant_confirm.STYLES[variant_confirm.INLINE]
        summary = shown_message(self, state, variant_confirm.summary(self, state, decl, hit[0], hit[1], pending))
        return markupsafe.Markup(variant_confirm.panel(
            heading, yes, no, summary, self._confirm_fields(state, decl, pending), pending["token"]))

    def _confirm_fields(self, state: dict, decl: Any, pending: dict) -> list[tuple[str, str]]:
        """The (label, value) lines of a pending submission's confirmation: the declared
        labels in the state's variant's words, the values as sent."""
        variant = state_variant(state)
        return [(variant_words(self, variant, label), value)
                for label, value in variant_confirm.shown_fields(decl, pending["form"])]

    def navigate(self, state: dict, url: str, *, push: bool = True, tab: dict | None = None,
                 follow: bool = True) -> Response:
        """Perform a GET of ``url`` in the active tab. Redirects (e.g. to sign-in) are
        followed, one request each, unless ``follow`` is false: then the redirect is
        returned for an HTTP client to follow."""
        tab = tab if tab is not None else state["browser"]["tabs"][state["browser"]["active"]]
        page: PageSpec | None
        env: dict[str, Any]
        with using(self._ctx(state, url)):
            for _ in range(MAX_REDIRECTS + 1):
                # One entry a request: a redirect followed here is the next GET, as a served
                # client's is, and a fragment stays in the browser, as it does on the wire,
                # so both runs record the same history (simweb.history).
                record(state, ["get", url.partition("#")[0]])
                self._tick(state)
                if url == "about:blank":
                    page, env, status, error, location = None, {}, 200, None, None
                    name = "blank"
                else:
                    try:
                        page, env, status, error, location = self._resolve(state, url)
                    except ExprRuntimeError as exc:
                        page, env, status, error, location = None, {}, 500, "Internal error: " + str(exc), None
                    if location is not None:
                        if not follow:
                            return Response(303, url, tab["page"], location=location)
                        url = location
                        continue
                    name = page.name if (page and status == 200) else "error"
                if page is not None and status == 200 and page.on_view:
                    env = dict(env)
                    apply_updates(page.on_view, state, env, self.world, self._entity)
                    page, env, status, error, location = self._resolve(state, url)
                if page is not None and status == 200:
                    for sub, cond in page.substates:
                        if cond(env):
                            name = f"{page.name}:{sub}"
                            break
                self._set_tab(state, tab, url, name, status, push)
                html = self._render_resolved(state, tab, page, env, status, error)
                return Response(status=status, url=url, page=name, error=error, html=html)
        raise RuntimeError(f"too many redirects at {url}")

    def _set_tab(self, state: dict, tab: dict, url: str, page: str, status: int, push: bool) -> None:
        browser = state["browser"]
        if push:
            hist = tab["history"][: tab["cursor"] + 1]
            if hist[-1] != url or tab["url"] != url:
                hist.append(url)
            if len(hist) > MAX_HISTORY:   # the oldest entries go, as in a real browser
                del hist[: len(hist) - MAX_HISTORY]
            tab["history"] = hist
            tab["cursor"] = len(hist) - 1
        tab["url"] = url
        tab["page"] = page
        tab["status"] = status
        tab["fields"] = {}
        tab["focus"] = None
        tab.pop("caret", None)   # the new document's controls have their carets afresh
        tab.pop("parts", None)
        tab["scroll"] = [0, 0]
        tab["flash"] = browser["pending_flash"]
        browser["pending_flash"] = None

    def render(self, state: dict, tab: dict | None = None) -> str:
        """The HTML of a tab (the active one by default): a pure function of the state."""
        tab = tab if tab is not None else state["browser"]["tabs"][state["browser"]["active"]]
        url = tab["url"]
        if url == "about:blank":
            return self._render_resolved(state, tab, None, {}, 200, None)
        with using(self._ctx(state, url)):
            try:
                page, env, status, error, location = self._resolve(state, url)
            except ExprRuntimeError as exc:
                page, env, status, error, location = None, {}, 500, "Internal error: " + str(exc), None
            if location is not None:   # the page now requires a redirect (e.g. signed out elsewhere)
                page, env, status, error = None, {}, 303, f"Redirecting to {location}"
            return self._render_resolved(state, tab, page, env, tab["status"] if status == 200 else status, error)

    def _render_resolved(self, state: dict, tab: dict, page: PageSpec | None, env: dict[str, Any], status: int,
                         error: str | None) -> str:
        if tab["url"] == "about:blank":
            return "<!DOCTYPE html><html><head><title></title></head><body></body></html>"
        ctx = dict(env)
        ctx["flash"] = tab["flash"]
        ctx["spec_title"] = self.spec.title
        variant = state["meta"].get("variant", 0)   # simweb.variants: the site's words and skin
        jinja = variant_jinja(self, variant) if variant else self.jinja
        if page is None or status != 200:
            for name, expr in self.spec.globals:
                if name not in ctx:
                    try:
                        ctx[name] = expr(self._env(state, tab["url"], {}) | ctx)
                    except ExprRuntimeError:
                        ctx[name] = None
            ctx.setdefault("url", tab["url"])
            ctx.setdefault("user", state["browser"]["user"])
            ctx.update(status=status, message=(shown_message(self, state, error) if variant and error else error) or "Error",
                       title=f"{status} · {self.spec.title}")
            template = jinja.get_template("error.html")
        else:
            ctx["title"] = page.title(ctx) if page.title else self.spec.title
            template = jinja.get_template(page.template)
        flash = tab["flash"]
        if variant:   # the title's format and words, the breadcrumb trail, the message's words
            variant_page(self, variant, ctx, page if page is not None and status == 200 else None)
            if flash is not None:   # (the state keeps today's words: variant_messages)
                flash = ctx["flash"] = dict(flash, message=shown_message(self, state, flash["message"]))
            if variant_sign_in(self, variant):   # sign-in links back to this page (variant_login)
                ctx[variant_login.HREF_VAR] = variant_sign_in_href(self, variant, tab["page"], tab["url"])
            if confirm_step(self, state) == variant_confirm.INLINE:
                ctx["variant_confirm_panel"] = self._confirm_panel(state, tab)
        with using(self._ctx(state, tab["url"])):
            html = template.render(ctx)
        if flash is not None and "field" in flash:   # a refusal about one field, on a variant that shows it there
            html = variant_flows.inline_error(html, flash["message"], flash["field"],
                                              shown_url(self, state, flash["form"]),
                                              field_errors(self, state) == "inline-summary")
        return self._split_forms(state, tab, html) if variant else html

    # ------------------------------------------------------------------ events
    def submit(self, state: dict, url: str, form: dict[str, Any], *, tab: dict | None = None,
               referrer: str | None = None) -> Response:
        """Perform a form POST to ``url`` from the active tab's page (or, for an HTTP
        client with several windows on one session, from the ``referrer`` page). Never
        raises for bad input: a failed guard or a bad field shows the site's error
        message instead."""
        browser = state["browser"]
        tab = tab if tab is not None else browser["tabs"][browser["active"]]
        back = tab["url"].partition("#")[0]   # the page as a server sees it: a Referer has no fragment
        source = tab["page"]
        if referrer is not None and referrer != back:
            page_hit = self.spec.match_page(urlsplit(referrer).path)
            if page_hit is not None:
                back, source = referrer, page_hit[0].name
            elif variant_confirm.is_page(referrer) and confirm_step(self, state):
                back, source = referrer, variant_confirm.PAGE
            elif variant_steps.is_page(referrer) and form_steps(self, state):
                back, source = referrer, variant_steps.PAGE
        # A browser sends a textarea's line breaks as CRLF (the form data set's rule), the
        # in-process browser as LF: the site reads both as LF, and records what it read.
        form = {k: _lf(v) for k, v in form.items()}
        path = urlsplit(url).path
        hit = self.spec.match_event(path)
        # what a replay needs (simweb.history); a secret value goes in sealed
        secret = [n for n, p in hit[0].params.items() if p.secret and n in form] if hit else []
        record(state, ["post", url, sealed(form, secret), back, source])
        self._tick(state)
        if hit is None:
            confirm = variant_confirm.parse_path(path) if "variant" in state["meta"] else None
            if confirm is not None and confirm_step(self, state):
                return self._confirm_post(state, url, confirm[0], confirm[1], back, source)
            token = variant_steps.parse_path(path) if "variant" in state["meta"] else None
            if token is not None and form_steps(self, state):
                return self._steps_post(state, url, token, form, back, source)
            return Response(405, url, "error", location=None, error="Method not allowed")
        event, args = hit
        if "variant" in state["meta"] and event.name in variant_catalogue(self).steppables \
                and form_steps(self, state):
            return self._steps_first(state, url, event, form, back, source)
        if "variant" in state["meta"] and event.name in variant_catalogue(self).confirmables \
                and confirm_step(self, state):
            # A form the site would accept (tried on a copy) waits for its confirmation
            # page; one it refuses is refused as without the step.
            trial = deep_copy(state)
            if self._fire(trial, url, event, args, form, back, source).error is None:
                location = variant_confirm.hold(state, state["meta"]["requests"], url, form, back, source)
                if confirm_step(self, state) == variant_confirm.INLINE:   # the form's page, with the panel
                    return Response(303, url, source, location=back, event=event.name)
                return Response(303, url, variant_confirm.PAGE, location=location, event=event.name)
        return self._fire(state, url, event, args, form, back, source)

    def _confirm_post(self, state: dict, url: str, token: int, cancel: bool, back: str, source: str) -> Response:
        """Confirm (or ``cancel``) the pending submission ``token`` from its confirmation
        page: exactly once (it is removed first), only from that page and for the user who
        sent it; otherwise nothing changes and the site says so."""
        name = "cancel_confirmation" if cancel else "confirm"
        page = variant_confirm.page_url(token)
        if confirm_step(self, state) == variant_confirm.INLINE:   # the panel is on the form's own page
            held = state["browser"].get("confirm")
            if held is not None and back != held["back"]:
                return self._refuse(state, name, back, "This action is not available on this page.", 409)
        elif source != variant_confirm.PAGE or back != page:
            return self._refuse(state, name, back, "This action is not available on this page.", 409)
        pending = variant_confirm.take(state, token)
        if pending is None:
            return self._refuse(state, name, back, "Nothing is waiting for confirmation here: nothing was changed.",
                                409)
        if cancel:
            state["browser"]["pending_flash"] = {"level": "info", "message": "Cancelled: nothing was changed."}
            return Response(303, url, pending["source"], location=pending["back"], event=name)
        hit = self.spec.match_event(urlsplit(pending["url"]).path)
        if hit is None:   # a pending submission names an event of the spec (App.check_state's schema)
            return self._refuse(state, name, back, "Nothing is waiting for confirmation here: nothing was changed.",
                                409)
        return self._fire(state, url, hit[0], hit[1], pending["form"], pending["back"], pending["source"])

    def _steps_first(self, state: dict, url: str, event: Event, form: dict[str, Any], back: str,
                     source: str) -> Response:
        """A multi-step form's first page sent: its fields checked as the event's parameters
        (a bad one refused as today), then held (nothing else changes) and the browser sent
        to the second page."""
        if not self.machine.allowed(event.name, source):
            return self._fail(state, event, back, "This action is not available on this page.", 409)
        decl = variant_catalogue(self).steppables[event.name]
        for name in decl.first:
            try:
                event.params[name].parse(form.get(name))
            except ParamError as exc:
                return self._fail(state, event, back, str(exc), 400)
        first = {k: form[k] for k in decl.first if k in form}
        location = variant_steps.hold(state, state["meta"]["requests"], url, first, back, source)
        return Response(303, url, variant_steps.PAGE, location=location, event=event.name)

    def _steps_post(self, state: dict, url: str, token: int, form: dict[str, Any], back: str,
                    source: str) -> Response:
        """A multi-step form's second page sent: the held form's event run exactly once with
        the held first fields and this page's others (a first field this POST names is
        ignored); only from that page, by the user who sent the first. A refused one keeps
        the held form and shows the second page again with the site's message."""
        page = variant_steps.page_url(token)
        if source != variant_steps.PAGE or back != page:
            return self._refuse(state, "form_step", back, "This action is not available on this page.", 409)
        entry = variant_steps.held(state, token)
        hit = self.spec.match_event(urlsplit(entry["url"]).path) if entry is not None else None
        decl = variant_catalogue(self).steppables.get(hit[0].name) if hit is not None else None
        if entry is None or hit is None or decl is None:
            return self._refuse(state, "form_step", back,
                                "Nothing is waiting to be continued here: nothing was changed.", 409)
        del state["browser"]["steps"]   # taken before the event runs: exactly once
        merged = {k: v for k, v in form.items() if k not in decl.first}
        merged.update(entry["form"])
        resp = self._fire(state, url, hit[0], hit[1], merged, entry["back"], entry["source"])
        if resp.error is not None:   # refused: the form stays held, its second page shows the message
            state["browser"]["steps"] = entry
            if resp.location == entry["back"]:
                resp = Response(resp.status, resp.url, resp.page, location=page, error=resp.error, event=resp.event)
        return resp

    def _refuse(self, state: dict, name: str, back: str, message: str, status: int) -> Response:
        state["browser"]["pending_flash"] = {"level": "error", "message": message}
        return Response(status, back, "error", location=back, error=message, event=name)

    def _fire(self, state: dict, url: str, event: Event, args: dict[str, Any], form: dict[str, Any], back: str,
              source: str) -> Response:
        """Run ``event`` (posted to ``url``) with ``form`` from page ``source`` at ``back``
        (the request already recorded): its guards, updates, flash and redirect, or the
        site's refusal."""
        if not self.machine.allowed(event.name, source):
            return self._fail(state, event, back, "This action is not available on this page.", 409)
        params: dict[str, Any] = {}
        try:
            for name, p in event.params.items():
                params[name] = p.parse(form.get(name))
        except ParamError as exc:
            return self._fail(state, event, back, str(exc), 400, field=(name, url))
        env = self._env(state, back, {})
        env.update(args)
        env["params"] = params
        failed: dict[str, Any] = {}    # the failing guard's redirect and status
        saved_runtime = deep_copy(state["runtime"])
        saved_browser = deep_copy(state["browser"])

        with using(self._ctx(state, back)):
            def check() -> str | None:
                for name, expr in event.lets:
                    env[name] = expr(env)
                for g in event.guards:
                    if not g.cond(env):
                        failed["status"] = g.status
                        failed["field"] = g.field
                        failed["redirect"] = g.redirect(env) if g.redirect is not None else None
                        return g.error(env) if g.error else "Request refused."
                return None

            try:
                outcome = self.machine.fire(event.name, source, check)
                if outcome.error is not None:
                    return self._fail(state, event, back, outcome.error, failed.get("status", 400),
                                      redirect=failed.get("redirect"),
                                      field=(failed["field"], url) if failed.get("field") else None)
                apply_updates(event.updates, state, env, self.world, self._entity)
                location = event.redirect(env) if event.redirect else back
                message = event.flash(env) if event.flash else None
            except (ExprRuntimeError, ExprErrorAtRuntime) as exc:
                # Leave the state exactly as before the request: no half-applied event.
                state["runtime"] = saved_runtime
                state["browser"] = saved_browser
                return self._fail(state, event, back, f"Something went wrong: {exc}", 500)
        if message:
            state["browser"]["pending_flash"] = {"level": "success", "message": message}
        return Response(303, url, outcome.state, location=location, event=event.name)

    def _fail(self, state: dict, event: Event, back: str, message: str, status: int,
              redirect: str | None = None, field: tuple[str, str] | None = None) -> Response:
        """The site's refusal of ``event``: its message for the next page. ``field`` is
        (the form field the refusal is about, the URL the form posted to): kept in the
        message on a variant that shows it beside the field (simweb.runtime.variant_flows)."""
        state["browser"]["pending_flash"] = {"level": "error", "message": message}
        if field is not None and field_errors(self, state):
            state["browser"]["pending_flash"].update(field=field[0], form=field[1])
        return Response(status, back, "error", location=redirect or back, error=message, event=event.name)

    def _tick(self, state: dict) -> None:
        meta = state["meta"]
        meta["requests"] += 1
        meta["clock"] += self.spec.clock["seconds_per_request"]
        if self.spec.timers:
            self._fire_due_timers(state)

    def _fire_due_timers(self, state: dict) -> None:
        """Run every pending timer whose time the clock has reached, in (time, id) order,
        as server-side events: ``now`` is the due time, ``user`` is None, ``args`` are the
        scheduled arguments. A timer whose updates fail is dropped and leaves no trace."""
        clock = state["meta"]["clock"]
        for _ in range(MAX_TIMERS_PER_REQUEST):
            pending = state["runtime"]["timers"]["pending"]
            if not pending or pending[0]["at"] > clock:
                return
            entry = pending.pop(0)
            timer = self.spec.timers.get(entry["timer"])
            if timer is None:
                continue
            env = self._env(state, "/", {})
            env.update(now=entry["at"], today=entry["at"] // 86400, user=None, args=entry["args"])
            saved = deep_copy(state["runtime"])
            with using(self._ctx(state, "/")):
                try:
                    if timer.cond is None or timer.cond(env):
                        apply_updates(timer.updates, state, env, self.world, self._entity)
                except (ExprRuntimeError, ExprErrorAtRuntime):
                    state["runtime"] = saved

    # ------------------------------------------------------------------ access rules
    def can(self, state: dict, name: str, *args: Any, url: str = "/") -> bool:
        """Whether permission ``name`` holds for ``args`` in ``state`` (as ``can()`` in
        expressions and templates)."""
        perm = self.spec.permissions.get(name)
        if perm is None:
            raise KeyError(f"unknown permission {name!r}")
        if len(args) != len(perm.args):
            raise TypeError(f"permission {name!r} takes {len(perm.args)} arguments ({', '.join(perm.args)}), "
                            f"got {len(args)}")
        with using(self._ctx(state, url)):
            return bool(perm.cond(perm.bind(self._env(state, url, {}), dict(zip(perm.args, args)))))


_APPS: dict[tuple[str, int, int], App] = {}


def load_app(definition: AppDefinition, seed: int = 0, size: int | None = None, *, progress: bool = False) -> App:
    """The process-wide App for (app, world seed, size): envs and forks share it."""
    key = (definition.name, int(seed), int(size or definition.default_size))
    app = _APPS.get(key)
    if app is None:
        app = _APPS[key] = App(definition, seed, size, progress=progress)
    return app
