"""The spec compiler: load, validate and compile an app spec (specs/<app>.yaml) into the
spec's data model (:mod:`simweb.core.specmodel`, whose names this module re-exports).

A spec is a declarative extended finite-state machine: pages (control states, with UI
sub-states), and events (form posts) with typed parameters, guards, declarative updates
and a target. Everything is compiled once here: expressions to closures, routes to
regular expressions, update paths to segment lists; nothing is interpreted from text
on the hot path. Because updates are data, each event's read set, write set and
side-effect class are derived here too.
"""
from __future__ import annotations

import ast
import copy
import difflib
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path as FsPath
from typing import Any

import jsonschema
import yaml

from .expr import Expr, ExprError, compile_expr
from .kits import KitError, resolve_kits
from .spec_schema import SPEC_SCHEMA
from .specmodel import (  # the model, re-exported: simweb.spec's names before the split
    BASE_NAMES,
    WRITABLE_ROOTS,
    AppendOp,
    Bookkeeping,
    CancelOp,
    CompiledValue,
    DeleteOp,
    Event,
    ExprErrorAtRuntime,
    Guard,
    IncOp,
    InsertOp,
    MergeOp,
    Message,
    PageSpec,
    ParamError,
    ParamSpec,
    PathUpdate,
    Permission,
    PermissionCheck,
    RemoveOp,
    RowUpdate,
    ScheduleOp,
    SetOp,
    Spec,
    SpecError,
    StatePath,
    Timer,
    TokenOp,
    TombstoneOp,
    Update,
    UpdateRowOp,
    Workflow,
    _PermissionMessage,
    split_message,
)
from .state import canonical

# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------

_ROUTE_VAR = re.compile(r"<(?:(int|str|slug):)?([a-z_][a-z0-9_]*)>")
_CONVERTERS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "int": (r"\d{1,12}", int),
    "str": (r"[^/]+", str),
    "slug": (r"[a-z0-9\-]+", str),
}


def _compile_route(route: str) -> tuple[re.Pattern, dict[str, Callable[[str], Any]]]:
    pattern, pos, conv = "", 0, {}
    for m in _ROUTE_VAR.finditer(route):
        pattern += re.escape(route[pos:m.start()])
        kind, name = m.group(1) or "str", m.group(2)
        rx, fn = _CONVERTERS[kind]
        pattern += f"(?P<{name}>{rx})"
        conv[name] = fn
        pos = m.end()
    pattern += re.escape(route[pos:])
    return re.compile(pattern), conv


class _Compiler:
    """Compiles one spec document; every error is prefixed with where it happened."""

    def __init__(self, file: str, functions: Mapping[str, Any], function_reads: Mapping[str, tuple[str, ...]]):
        self.file = file
        self.functions = functions
        self.function_reads = function_reads
        self.where = ""
        self.permissions: dict[str, Permission] = {}
        self.workflows_by_table: dict[str, tuple[Workflow, ...]] = {}
        self.timer_args: dict[str, tuple[str, ...]] = {}

    def fail(self, field_name: str, msg: str) -> SpecError:
        return SpecError(f"{self.file}: {self.where}: field '{field_name}': {msg}")

    def expr(self, text: Any, field_name: str, names: set[str]) -> Expr:
        if not isinstance(text, str):
            raise self.fail(field_name, f"expected an expression string, got {type(text).__name__}")
        try:
            return compile_expr(text, functions=self.functions, names=sorted(names))
        except ExprError as exc:
            raise self.fail(field_name, str(exc)) from None

    def message(self, text: str, field_name: str, names: set[str]) -> Message:
        """A user-facing message with {expression} interpolations ('{{' is a literal brace)."""
        try:
            parts = split_message(text)
        except ValueError as exc:
            raise self.fail(field_name, str(exc)) from None
        compiled: list[Any] = []
        reads: set[str] = set()
        calls: set[str] = set()
        for kind, piece in parts:
            if kind == "text":
                compiled.append(piece)
            else:
                e = self.expr(piece, field_name, names)
                reads |= e.reads
                calls |= e.calls
                compiled.append(e)
        return Message(text, tuple(compiled), frozenset(reads), frozenset(calls))

    def value(self, raw: Any, field_name: str, names: set[str]) -> CompiledValue:
        if isinstance(raw, str):
            e = self.expr(raw, field_name, names)
            return CompiledValue(e, e.reads)
        if isinstance(raw, dict):
            parts = [(str(k), self.value(v, f"{field_name}.{k}", names)) for k, v in raw.items()]
            reads = frozenset().union(*(v.reads for _, v in parts)) if parts else frozenset()
            def build_dict(env: Mapping[str, Any]) -> dict[str, Any]:
                return {k: v(env) for k, v in parts}
            return CompiledValue(build_dict, reads)
        if isinstance(raw, list):
            items = [self.value(v, f"{field_name}[{i}]", names) for i, v in enumerate(raw)]
            reads = frozenset().union(*(v.reads for v in items)) if items else frozenset()
            def build_list(env: Mapping[str, Any]) -> list[Any]:
                return [v(env) for v in items]
            return CompiledValue(build_list, reads)
        if raw is None or isinstance(raw, (bool, int, float)):
            constant = raw

            def const(env: Mapping[str, Any]) -> Any:
                return constant
            return CompiledValue(const, frozenset())
        raise self.fail(field_name, f"unsupported value {raw!r}")

    def path(self, text: str, field_name: str, names: set[str]) -> StatePath:
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as exc:
            raise self.fail(field_name, f"invalid path {text!r}: {exc.msg}") from None
        segs: list[Any] = []
        static: list[str] = []
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Attribute):
                if node.attr.startswith("_"):
                    raise self.fail(field_name, f"private name {node.attr!r} in path {text!r}")
                segs.append(node.attr)
                static.append(node.attr)
            else:
                sl = node.slice
                if isinstance(sl, ast.Constant) and isinstance(sl.value, str):
                    segs.append(sl.value)
                    static.append(sl.value)
                else:
                    segs.append(self.expr(ast.unparse(sl), field_name, names))
                    static.append("*")
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in WRITABLE_ROOTS:
            raise self.fail(field_name, f"path {text!r} must start with one of {sorted(WRITABLE_ROOTS)}")
        if not segs:
            raise self.fail(field_name, f"path {text!r} must name a location inside {node.id}")
        root = WRITABLE_ROOTS[node.id]
        segs.reverse()
        static.reverse()
        return StatePath(root, tuple(segs), ".".join([root, *static]), text)

    def checks(self, raw: list[dict], field_name: str, names: set[str], default_status: int) -> list[Guard]:
        out = []
        for i, c in enumerate(raw or []):
            f = f"{field_name}[{i}]"
            if "permission" in c:
                out.append(self.permission_check(c, f, names))
                continue
            out.append(Guard(
                cond=self.expr(c["if"], f + ".if", names),
                error=self.message(c["error"], f + ".error", names) if "error" in c else None,
                status=int(c.get("status", default_status)),
                redirect=self.expr(c["redirect"], f + ".redirect", names) if "redirect" in c else None,
                field=c.get("field"),
            ))
        return out

    def permission_check(self, c: dict, f: str, names: set[str]) -> Guard:
        """A guard that applies a named permission: its args are expressions of the
        caller (an omitted arg is the caller's name of the same spelling)."""
        name = c["permission"]
        perm = self.permissions.get(name)
        if perm is None:
            close = difflib.get_close_matches(name, list(self.permissions), n=1)
            raise self.fail(f + ".permission", f"unknown permission '{name}'"
                            + (f" (did you mean '{close[0]}'?)" if close else ""))
        given = c.get("args") or {}
        for extra in given:
            if extra not in perm.args:
                raise self.fail(f + f".args.{extra}", f"permission '{name}' takes no argument '{extra}' "
                                f"(it takes: {', '.join(perm.args) or 'none'})")
        args = tuple((a, self.expr(given.get(a, a), f + f".args.{a}", names)) for a in perm.args)
        cond = PermissionCheck(perm, args)
        if "error" in c:
            error: Any = self.message(c["error"], f + ".error", names)
        elif perm.error is not None:
            error = _PermissionMessage(cond, perm.error)
        else:
            error = None
        return Guard(cond=cond, error=error, status=int(c.get("status", perm.status)),  # type: ignore[arg-type]
                     redirect=self.expr(c["redirect"], f + ".redirect", names) if "redirect" in c else None)

    def params(self, raw: dict, field_name: str) -> dict[str, ParamSpec]:
        out = {}
        for name, p in (raw or {}).items():
            pattern = None
            if "pattern" in p:
                try:
                    pattern = re.compile(p["pattern"])
                except re.error as exc:
                    raise self.fail(f"{field_name}.{name}.pattern", f"bad regular expression: {exc}") from None
            if p["type"] == "enum" and not p.get("values"):
                raise self.fail(f"{field_name}.{name}", "an enum parameter needs 'values'")
            out[name] = ParamSpec(
                name=name, type=p["type"], label=p.get("label", name.replace("_", " ").capitalize()),
                required=bool(p.get("required", "default" not in p and p["type"] not in ("bool", "list"))),
                default=p.get("default", [] if p["type"] == "list" else (False if p["type"] == "bool" else None)),
                min=p.get("min"), max=p.get("max"), min_length=p.get("min_length"), max_length=p.get("max_length"),
                pattern=pattern, pattern_error=p.get("pattern_error"), values=tuple(p.get("values", ())),
                strip=bool(p.get("strip", True)), secret=bool(p.get("secret", False)),
            )
        return out

    def updates(self, raw: list[dict], field_name: str, names: set[str]) -> list[Update]:
        out: list[Update] = []
        names = set(names)
        for i, u in enumerate(raw or []):
            f = f"{field_name}[{i}]"
            local = set(names)
            loop_var = loop_iter = None
            if "for" in u:
                var, _, it = u["for"].strip().partition(" in ")
                loop_var = var.strip()
                loop_iter = self.expr(it.strip(), f + ".for", local)
                local.add(loop_var)
            when = self.expr(u["when"], f + ".when", local) if "when" in u else None
            op = u["op"]
            parts: list[Any] = [loop_iter, when]   # what the update reads
            common: dict[str, Any] = {"when": when, "loop_var": loop_var, "loop_iter": loop_iter, "bind": u.get("as")}
            made: Update
            if op in _PATH_OPS:
                path = self.path(u["path"], f + ".path", local)
                parts += [seg for seg in path.segments if not isinstance(seg, str)]
                kw: dict[str, Any] = {"path": path}
                if op in ("set", "append", "merge"):
                    kw["value"] = self.value(u["value"], f + ".value", local)
                elif op == "inc":
                    kw["value"] = self.value(u["value"], f + ".value", local) if "value" in u else \
                        self.value(u.get("by", 1), f + ".by", local)
                elif op == "remove":
                    kw["where"] = self.expr(u["where"], f + ".where", local | {"it"})
                elif op == "token":
                    kw.update({k: u[k] for k in ("length", "alphabet") if k in u})
                parts += [kw.get("value"), kw.get("where")]
                made = _PATH_OPS[op](**common, **kw, writes=path.static, reads=_reads(parts))
            elif op in ("insert", "update", "tombstone"):
                table = u["table"]
                raw_id = u.get("id", "auto" if op == "insert" else None)
                if raw_id == "auto" and op != "insert":
                    raise self.fail(f + ".id", "'auto' ids are only for insert")
                if raw_id is None:
                    raise self.fail(f + ".id", f"{op} needs the id of the row")
                ident = None if raw_id == "auto" else self.value(raw_id, f + ".id", local)
                parts.append(ident)
                writes = f"runtime.entities.{table}.*"
                wfs = self.workflows_by_table.get(table, ())
                if op == "insert":
                    value = self.value(u["value"], f + ".value", local)
                    parts.append(value)
                    made = InsertOp(**common, table=table, workflows=wfs, id=ident, value=value,
                                    writes=writes, reads=_reads(parts))
                elif ident is None:
                    raise self.fail(f + ".id", f"{op} needs the id of the row")
                elif op == "update":
                    fields = tuple((k, self.value(v, f"{f}.fields.{k}", local)) for k, v in u["fields"].items())
                    parts += [v for _, v in fields]
                    made = UpdateRowOp(**common, table=table, workflows=wfs, id=ident, fields=fields,
                                       writes=writes, reads=_reads(parts))
                else:
                    made = TombstoneOp(**common, table=table, id=ident, writes=writes, reads=_reads(parts))
            else:   # schedule / cancel
                timer = u.get("timer")
                if timer is not None and timer not in self.timer_args:
                    close = difflib.get_close_matches(timer, list(self.timer_args), n=1)
                    raise self.fail(f + ".timer", f"unknown timer '{timer}'"
                                    + (f" (did you mean '{close[0]}'?)" if close else ""))
                key = self.expr(u["key"], f + ".key", local) if "key" in u else None
                parts.append(key)
                if op == "schedule":
                    if timer is None:
                        raise self.fail(f + ".timer", "schedule needs a timer")
                    at = self.expr(u["at"], f + ".at", local)
                    given = u.get("args") or {}
                    wanted = self.timer_args[timer]
                    if sorted(given) != sorted(wanted):
                        raise self.fail(f + ".args", f"timer '{timer}' takes args {list(wanted)}, got {sorted(given)}")
                    targs = tuple((a, self.value(given[a], f + f".args.{a}", local)) for a in wanted)
                    parts += [at, *(v for _, v in targs)]
                    made = ScheduleOp(**common, timer=timer, at=at, args=targs, key=key,
                                      writes="runtime.timers", reads=_reads(parts))
                else:
                    made = CancelOp(**common, timer=timer, key=key, writes="runtime.timers", reads=_reads(parts))
            if made.bind:
                names.add(made.bind)
            out.append(made)
        return out


_PATH_OPS: dict[str, type[PathUpdate]] = {
    "set": SetOp, "inc": IncOp, "append": AppendOp, "merge": MergeOp, "remove": RemoveOp, "delete": DeleteOp,
    "token": TokenOp,
}


def _reads(parts: list[Any]) -> frozenset[str]:
    """The union of the read sets of an update's compiled pieces."""
    out: set[str] = set()
    for part in parts:
        if part is not None:
            out |= part.reads
    return frozenset(out)


def _locate(path: list[Any]) -> tuple[str, str]:
    """Turn a jsonschema error path into ('event 'x'', 'field.path')."""
    parts = [str(p) for p in path]
    if len(parts) >= 2 and parts[0] in ("events", "pages"):
        kind = "event" if parts[0] == "events" else "page"
        rest = parts[2:]
        fld = ""
        for p in rest:
            fld += f"[{p}]" if p.isdigit() else (f".{p}" if fld else p)
        return f"{kind} '{parts[1]}'", fld or "(itself)"
    return "top level", ".".join(parts) or "(document)"


def _schema_error_message(file: str, err: jsonschema.ValidationError) -> str:
    where, fld = _locate(list(err.absolute_path))
    msg = err.message
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = list(err.schema.get("properties", {}))
        extra = [k for k in err.instance if k not in allowed]
        if extra:
            close = difflib.get_close_matches(str(extra[0]), allowed, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            msg = f"unknown field '{extra[0]}'{hint}"
            fld = f"{fld}.{extra[0]}" if fld != "(itself)" else str(extra[0])
    return f"{file}: {where}: field '{fld}': {msg}"


_VALIDATOR = jsonschema.Draft202012Validator(SPEC_SCHEMA)


def validate_spec_document(doc: Any, file: str) -> None:
    """Raise SpecError naming file, event and field for the first schema violation."""
    if not isinstance(doc, dict):
        raise SpecError(f"{file}: the spec must be a YAML mapping")
    errors = sorted(_VALIDATOR.iter_errors(doc), key=lambda e: (len(list(e.absolute_path)), list(map(str, e.absolute_path))))
    if errors:
        # The deepest error of the first location is usually the most specific.
        first = errors[0]
        best = jsonschema.exceptions.best_match([first]) if first.context else first
        raise SpecError(_schema_error_message(file, best))


def load_spec(path: str | FsPath, functions: Mapping[str, Any] | None = None, *,
              function_reads: Mapping[str, tuple[str, ...]] | None = None,
              columns: Mapping[str, Sequence[str]] | None = None) -> Spec:
    """Load, validate and compile the spec at ``path``.

    ``functions`` are the callables expressions may call (an app's FunctionTable),
    ``function_reads`` the state paths each one reads (for read sets), and ``columns`` the
    columns of the world's tables (for ``required: columns`` in the runtime schema)."""
    file = str(path)
    try:
        text = FsPath(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{file}: cannot read: {exc.strerror}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise SpecError(f"{file}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    return compile_spec(doc, file, functions or {}, function_reads or {}, columns=columns)


def compile_message(text: str, where: str, functions: Mapping[str, Any], names: set[str]) -> Message:
    """A message of the spec language outside a spec document (``{expression}`` parts over
    ``names`` and the app's ``functions``): a SpecError naming ``where`` if it does not compile."""
    c = _Compiler(where, functions, {})
    c.where = "message"
    return c.message(text, "text", names)


def compile_spec(doc: Any, file: str, functions: Mapping[str, Any],
                 function_reads: Mapping[str, tuple[str, ...]], *,
                 columns: Mapping[str, Sequence[str]] | None = None) -> Spec:
    """Validate and compile a parsed spec document (see :func:`load_spec`). The kits it
    includes are merged in first (:func:`simweb.kits.resolve_kits`); ``raw`` and ``hash``
    are of the merged document."""
    try:
        doc, kits = resolve_kits(doc)
    except KitError as exc:
        raise SpecError(f"{file}: top level: field 'kits': {exc}") from None
    validate_spec_document(doc, file)
    doc = _with_model_columns(doc, file, columns or {})
    c = _Compiler(file, functions, function_reads)
    base = set(BASE_NAMES)

    roles = tuple(doc.get("roles") or ())
    permissions, workflows = _compile_access(doc, c, base)
    c.permissions = permissions
    by_table: dict[str, list[Workflow]] = {}
    for wf in workflows.values():
        by_table.setdefault(wf.table, []).append(wf)
    c.workflows_by_table = {t: tuple(w) for t, w in by_table.items()}
    c.timer_args = {name: tuple(t.get("args") or ()) for name, t in (doc.get("timers") or {}).items()}

    c.where = "globals"
    glob = []
    gnames = set(base)
    for name, text in (doc.get("globals") or {}).items():
        glob.append((name, c.expr(text, name, gnames)))
        gnames.add(name)

    pages: dict[str, PageSpec] = {}
    for name, p in doc["pages"].items():
        c.where = f"page '{name}'"
        regex, conv = _compile_route(p["route"])
        names = base | set(conv) | {"page"}
        load = []
        for var, text in (p.get("load") or {}).items():
            load.append((var, c.expr(text, f"load.{var}", names)))
            names.add(var)
        names |= set(n for n, _ in glob)
        pages[name] = PageSpec(
            name=name, route=p["route"], regex=regex, converters=conv, template=p["template"],
            title=c.message(p["title"], "title", names) if "title" in p else None,
            query=c.params(p.get("query"), "query"), load=load,
            require=c.checks(p.get("require"), "require", names, 404),
            on_view=c.updates(p.get("on_view"), "on_view", names),
            substates=[(s, c.expr(t, f"substates.{s}", names)) for s, t in (p.get("substates") or {}).items()],
        )

    events: dict[str, Event] = {}
    for name, e in doc["events"].items():
        c.where = f"event '{name}'"
        regex, conv = _compile_route(e["route"])
        sources = list(pages) if e["from"] == "*" else list(e["from"])
        for s in sources:
            if s not in pages:
                close = difflib.get_close_matches(s, list(pages), n=1)
                raise c.fail("from", f"unknown page '{s}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        target = e.get("to")
        if target is not None and target not in pages:
            raise c.fail("to", f"unknown page '{target}'")
        params = c.params(e.get("params"), "params")
        names = base | set(conv) | {"params"}
        lets = []
        for var, text in (e.get("let") or {}).items():
            lets.append((var, c.expr(text, f"let.{var}", names)))
            names.add(var)
        guards = c.checks(e.get("guards"), "guards", names, 400)
        for i, g in enumerate(guards):
            if g.field is not None and g.field not in params:
                raise c.fail(f"guards[{i}].field", f"'{g.field}' is not a param of this event")
        updates = c.updates(e.get("updates"), "updates", names)
        names |= {u.bind for u in updates if u.bind}
        ev = Event(
            name=name, description=e.get("description", ""), route=e["route"], regex=regex, converters=conv,
            sources=sources, target=target, params=params, lets=lets, guards=guards, updates=updates,
            redirect=c.expr(e["redirect"], "redirect", names) if "redirect" in e else None,
            flash=c.message(e["flash"], "flash", names) if "flash" in e else None,
        )
        events[name] = ev

    timers: dict[str, Timer] = {}
    for name, t in (doc.get("timers") or {}).items():
        c.where = f"timer '{name}'"
        args = c.timer_args[name]
        names = (base - {"url", "query"}) | {"args"}
        timers[name] = Timer(
            name=name, args=args, cond=c.expr(t["if"], "if", names) if "if" in t else None,
            updates=c.updates(t["updates"], "updates", names), description=t.get("description", ""),
        )

    _derive_effects(events, function_reads, c, doc)
    _derive_access(events, doc, workflows)
    runtime_initial, runtime_schema = doc["runtime"]["initial"], doc["runtime"]["schema"]
    if timers:
        runtime_initial, runtime_schema = _with_timer_queue(runtime_initial, runtime_schema)
    if "auth" in kits:
        runtime_schema = _with_sign_in_log(runtime_schema)
    spec = Spec(
        app=doc["app"], version=doc["version"], title=doc["title"], description=doc.get("description", ""),
        start_url=doc["start_url"], clock=dict(doc["clock"]), runtime_initial=runtime_initial,
        runtime_schema=runtime_schema, globals=glob, pages=pages, events=events,
        hash=hashlib.sha256(canonical(doc)).hexdigest(), path=file, raw=doc,
        roles=roles, permissions=permissions, workflows=workflows, timers=timers,
        bookkeeping=Bookkeeping.from_spec(doc.get("bookkeeping")), kits=kits,
    )
    try:
        jsonschema.Draft202012Validator.check_schema(spec.runtime_schema)
        jsonschema.Draft202012Validator(spec.runtime_schema).validate(spec.runtime_initial)
    except jsonschema.SchemaError as exc:
        raise SpecError(f"{file}: top level: field 'runtime.schema': not a valid JSON Schema: {exc.message}") from None
    except jsonschema.ValidationError as exc:
        raise SpecError(f"{file}: top level: field 'runtime.initial': does not match runtime.schema: {exc.message}") from None
    return spec


def _compile_access(doc: dict, c: _Compiler, base: set[str]) -> tuple[dict[str, Permission], dict[str, Workflow]]:
    """The spec's permissions and workflows (checked for consistency)."""
    permissions: dict[str, Permission] = {}
    for name, p in (doc.get("permissions") or {}).items():
        c.where = f"permission '{name}'"
        args = tuple(p.get("args") or ())
        clash = sorted(set(args) & set(BASE_NAMES))
        if clash:
            raise c.fail("args", f"argument '{clash[0]}' shadows a built-in name")
        names = base | set(args)
        permissions[name] = Permission(
            name=name, args=args, cond=c.expr(p["if"], "if", names),
            error=c.message(p["error"], "error", names) if "error" in p else None,
            status=int(p.get("status", 403)), description=p.get("description", ""),
        )
    workflows: dict[str, Workflow] = {}
    seen: dict[tuple[str, str], str] = {}
    for name, w in (doc.get("workflows") or {}).items():
        c.where = f"workflow '{name}'"
        owner = seen.setdefault((w["table"], w["field"]), name)
        if owner != name:
            raise c.fail("field", f"{w['table']}.{w['field']} already has workflow '{owner}'")
        edges: list[tuple[str, str, str]] = []
        states = [w["initial"]]
        for i, t in enumerate(w["transitions"]):
            if t["from"] == t["to"]:
                raise c.fail(f"transitions[{i}]", f"a transition must change the state ('{t['from']}' to itself)")
            if any(a == t["from"] and b == t["to"] for a, b, _ in edges):
                raise c.fail(f"transitions[{i}]", f"duplicate transition {t['from']} -> {t['to']}")
            edges.append((t["from"], t["to"], t.get("name", t["to"])))
            states += [s for s in (t["from"], t["to"]) if s not in states]
        workflows[name] = Workflow(name, w["table"], w["field"], w["initial"], tuple(states), tuple(edges))
    return permissions, workflows


def _derive_access(events: dict[str, Event], doc: dict, workflows: dict[str, Workflow]) -> None:
    """Per event: the permissions its guards apply and the workflow states it can move
    entities to (read from the literal values its update ops write)."""
    for ev in events.values():
        raw = doc["events"][ev.name]
        ev.permissions = sorted({g["permission"] for g in raw.get("guards") or () if "permission" in g})
        moves = []
        for u in raw.get("updates") or ():
            for wf in workflows.values():
                if wf.table != u.get("table"):
                    continue
                if u.get("op") == "insert":       # a new row starts in the initial state
                    moves.append(f"{wf.name} → {wf.initial} (new)")
                elif u.get("op") == "update" and wf.field in (u.get("fields") or {}):
                    moves.append(f"{wf.name} → {_literal_str(u['fields'][wf.field]) or '(computed)'}")
        ev.moves = sorted(set(moves))


def _literal_str(text: Any) -> str | None:
    """The string an expression is, when it is a plain string literal ("'closed'")."""
    if not isinstance(text, str):
        return None
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


#: JSON Schema of the engine-managed queue of pending timers (runtime.timers).
TIMER_QUEUE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["next", "pending"],
    "properties": {
        "next": {"type": "integer", "minimum": 1},
        "pending": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "at", "timer", "key", "args"],
                "properties": {
                    "id": {"type": "integer", "minimum": 1},
                    "at": {"type": "integer", "minimum": 0},
                    "timer": {"type": "string"},
                    "key": {"type": ["string", "null"]},
                    "args": {"type": "object"},
                },
            },
        },
    },
}


def _with_model_columns(doc: dict, file: str, columns: Mapping[str, Sequence[str]]) -> dict:
    """``doc`` with each entity row schema's ``required: columns`` replaced by the columns of
    that table's model in the world (so the spec does not list them a second time)."""
    tables = (((doc["runtime"]["schema"].get("properties") or {}).get("entities") or {}).get("properties") or {})
    wanted = [t for t, sch in tables.items() if isinstance(sch, dict)
              and isinstance(sch.get("additionalProperties"), dict) and sch["additionalProperties"].get("required") == "columns"]
    if not wanted:
        return doc
    doc = copy.deepcopy(doc)
    rows = doc["runtime"]["schema"]["properties"]["entities"]["properties"]
    for table in wanted:
        if table not in columns:
            raise SpecError(f"{file}: top level: field 'runtime.schema': entities.{table} requires 'columns', but the "
                            f"world declares no model for table '{table}' (ROW_MAPS)")
        rows[table]["additionalProperties"]["required"] = list(columns[table])
    return doc


def _with_timer_queue(initial: dict, schema: dict) -> tuple[dict, dict]:
    """The runtime layer of a spec with timers: plus ``timers`` (the pending queue)."""
    initial = dict(initial)
    initial.setdefault("timers", {"next": 1, "pending": []})
    schema = dict(schema)
    props = dict(schema.get("properties") or {})
    props.setdefault("timers", TIMER_QUEUE_SCHEMA)
    schema["properties"] = props
    if "required" in schema and "timers" not in schema["required"]:
        schema["required"] = [*schema["required"], "timers"]
    return initial, schema


def _with_sign_in_log(schema: dict) -> dict:
    """The runtime layer of a spec with the auth kit: plus ``signins``, the accounts signed in
    during the run, in order (the kit's sign-in event appends each; absent until the first).
    The verdict reads it: a sign-in as an account other than the goal's is collateral
    (:data:`simweb.effects.SIGN_IN_LOG`)."""
    schema = dict(schema)
    props = dict(schema.get("properties") or {})
    props.setdefault("signins", {"type": "array", "items": {"type": "integer"}})
    schema["properties"] = props
    return schema


_ALIASES = {"rt": "runtime"}


def _normalise_read(path: str) -> str:
    head, _, rest = path.partition(".")
    head = _ALIASES.get(head, head)
    return f"{head}.{rest}" if rest else head


def _overlaps(a: str, b: str) -> bool:
    """Whether two static paths (with * wildcards) can name the same location or nest."""
    pa, pb = a.split("."), b.split(".")
    for x, y in zip(pa, pb):
        if x != y and x != "*" and y != "*":
            return False
    return True


def _derive_effects(events: dict[str, Event], function_reads: Mapping[str, tuple[str, ...]],
                    c: _Compiler, doc: dict) -> None:
    """Read set, write set and side-effect class of every event, from its declarations.

    none          writes nothing outside the browser layer (UI, navigation, sign-in cookie)
    irreversible  deletes an entity (tombstone), or creates records (insert/append) in a
                  collection that no event of the spec can ever remove from
    reversible    everything else: the machine has events that write the same paths back
    """
    removers: list[str] = []
    for ev in events.values():
        for u in ev.updates:
            if u.op in ("remove", "delete", "tombstone"):
                removers.append(u.writes)
    for ev in events.values():
        reads: set[str] = set()
        exprs = [e for _, e in ev.lets] + [g.cond for g in ev.guards]
        if ev.redirect:
            exprs.append(ev.redirect)
        for e in exprs:
            reads |= e.reads
            for fn in e.calls:
                reads |= set(function_reads.get(fn, ()))
        for u in ev.updates:
            reads |= u.reads
        local = {"params", *(n for n, _ in ev.lets), *ev.converters, *(u.bind for u in ev.updates if u.bind),
                 *(u.loop_var for u in ev.updates if u.loop_var), "it"}
        ev.reads = sorted({_normalise_read(r) for r in reads if r.split(".")[0] not in local})
        ev.writes = sorted({u.writes for u in ev.updates})
        backend = [u for u in ev.updates if not u.writes.startswith("browser")]
        if not backend:
            derived = "none"
        elif any(u.op == "tombstone" for u in backend):
            derived = "irreversible"
        elif any(u.op in ("insert", "append") and not any(_overlaps(u.writes, r) for r in removers)
                 for u in backend):
            derived = "irreversible"
        else:
            derived = "reversible"
        ev.derived_effect = derived
        declared = doc["events"][ev.name].get("effect")
        order = ["none", "reversible", "irreversible"]
        if declared and order.index(declared) < order.index(derived):
            c.where = f"event '{ev.name}'"
            raise c.fail("effect", f"declared '{declared}' but its updates make it '{derived}'")
        ev.effect = declared or derived


__all__ = ["AppendOp", "BASE_NAMES", "Bookkeeping", "CancelOp", "CompiledValue", "DeleteOp", "Event", "ExprErrorAtRuntime", "Guard", "IncOp", "InsertOp", "MergeOp", "Message", "PageSpec", "ParamError", "ParamSpec", "PathUpdate", "Permission", "PermissionCheck", "RemoveOp", "RowUpdate", "ScheduleOp", "SetOp", "Spec", "SpecError", "StatePath", "Timer", "TokenOp", "TombstoneOp", "Update", "UpdateRowOp", "WRITABLE_ROOTS", "Workflow", "compile_message", "compile_spec", "load_spec", "split_message", "validate_spec_document"]
