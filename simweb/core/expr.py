"""A small, safe expression language for guards and update values in app specs.

Expressions use Python syntax (parsed with ``ast.parse(..., mode="eval")``) but
only a whitelisted subset is accepted, and the accepted tree is turned into a
tree of nested closures once, at compile time.  Nothing here ever hands the
expression text to ``eval``/``exec``/``compile``.

Language summary
----------------
* Literals: ``int``, ``float``, ``str``, ``True``, ``False``, ``None``; list,
  tuple (evaluates to a list) and dict literals.  f-strings without ``!r``/``!s``
  conversions and with literal format specs only.
* Names are looked up in the evaluation environment (a Mapping).  Comprehension
  variables are local and shadow environment names.
* ``a.b`` on a Mapping is ``a.get("b")``; on ``None`` it is ``None`` (null-safe
  chaining).  ``a[k]`` on a Mapping is ``a.get(k)`` (an int ``k`` looks up
  ``str(k)``: state keys are strings), on a list/str/tuple it is
  normal indexing or slicing, on ``None`` it is ``None``.  Method calls on
  ``None`` (``x.lower()`` with ``x`` missing) are null-safe as well.
* Operators ``+ - * / // % **``, unary ``- + not``, all comparisons (chained
  too), ``in``/``not in``, ``is None``/``is not None``, ``and``/``or`` (returning
  an operand, like Python), ``x if c else y``.
* List/generator/dict comprehensions (generators evaluate to lists, except as
  the single argument of ``any``/``all`` where they stay lazy so short-circuiting
  behaves as in Python).
* Calls to registered functions and to a whitelist of builtins; method calls
  from a per-type whitelist.

Errors
------
* :class:`ExprError` (a ``ValueError``) is raised by :func:`compile_expr` for
  anything outside the language.
* :class:`ExprRuntimeError` is raised when evaluating fails.

Both carry a one-line message that quotes the expression.
"""

from __future__ import annotations

import ast
import difflib
import operator
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, NoReturn

__all__ = [
    "BUILTIN_FUNCTIONS",
    "Expr",
    "ExprError",
    "ExprRuntimeError",
    "METHODS",
    "compile_expr",
]

# --------------------------------------------------------------------------
# Limits.  They exist so that a spec (or a hostile input that reaches a spec)
# cannot make a single evaluation allocate unbounded memory or spin forever.
# --------------------------------------------------------------------------

#: ``range()`` may produce at most this many items.
MAX_RANGE_LEN = 10_000
#: ``a ** b`` is rejected when ``abs(b)`` exceeds this.
MAX_POW_EXPONENT = 64
#: ``a ** b`` on ints is rejected when the result would exceed this many bits.
MAX_POW_BITS = 10_000
#: ``str * int`` / ``list * int`` may produce at most this many items.
MAX_REPEAT_LEN = 100_000
#: One comprehension evaluation may run at most this many loop iterations.
MAX_COMPREHENSION_ITERATIONS = 100_000
#: Numbers inside an f-string format spec (width/precision) may not exceed this.
MAX_FORMAT_NUMBER = 1_000
#: Maximum nesting depth of the expression tree.  Keeps both the compiler and
#: the evaluator (one Python frame per nesting level) well below the
#: interpreter's recursion limit, whatever ``max_nodes`` is set to.
MAX_DEPTH = 100

_EMPTY: Mapping[str, Callable[..., Any]] = MappingProxyType({})


class ExprError(ValueError):
    """The expression was rejected at compile time (syntax, forbidden construct, limit)."""


class ExprRuntimeError(RuntimeError):
    """Evaluating a compiled expression failed."""


class _Fail(Exception):
    """Internal runtime failure; :meth:`Expr.__call__` adds the expression text.

    The closures do not know the source text, so they raise this and the
    top-level call turns it into an :class:`ExprRuntimeError`.
    """


# An evaluation closure takes the environment and the comprehension-locals
# dict (``None`` outside comprehensions).  Keeping locals separate from the
# environment means comprehension variables never require copying ``env``.
_Fn = Callable[[Mapping[str, Any], "dict[str, Any] | None"], Any]


def _constant(text: Any) -> _Fn:
    """A compiled f-string piece that is literal text."""
    return lambda env, loc: text


def _formatted(value: _Fn, spec: str) -> _Fn:
    """A compiled f-string piece ``{value:spec}``."""
    return lambda env, loc: format(value(env, loc), spec)


def _quote(source: str, limit: int = 200) -> str:
    """Quote ``source`` for an error message, on one line and bounded in length."""
    if len(source) > limit:
        source = source[:limit] + "..."
    return repr(source)


def _one_line(text: object, limit: int = 300) -> str:
    msg = " ".join(str(text).split())
    if len(msg) > limit:
        msg = msg[:limit] + "..."
    return msg


def _type_name(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, Mapping):
        return "mapping"
    return type(value).__name__


# --------------------------------------------------------------------------
# Runtime helpers for operators with extra safety checks.
# --------------------------------------------------------------------------

_SEQUENCES = (str, list, tuple)


def _check_repeat(length: int, times: object) -> None:
    if isinstance(times, int) and length * times > MAX_REPEAT_LEN:
        raise _Fail(f"sequence repetition would produce more than {MAX_REPEAT_LEN} items")


def _mul(a: Any, b: Any) -> Any:
    # Only repetition of sequences can blow up memory; numbers go straight through.
    if isinstance(a, _SEQUENCES):
        _check_repeat(len(a), b)
    elif isinstance(b, _SEQUENCES):
        _check_repeat(len(b), a)
    return a * b


def _mod(a: Any, b: Any) -> Any:
    # printf-style formatting can request arbitrarily wide output ('%999999999d').
    if isinstance(a, str):
        raise _Fail("'%' string formatting is not supported; use an f-string")
    return a % b


def _pow(a: Any, b: Any) -> Any:
    if isinstance(b, (int, float)):
        if abs(b) > MAX_POW_EXPONENT:
            raise _Fail(f"exponent {b!r} is too large (limit {MAX_POW_EXPONENT})")
        if (
            isinstance(a, int)
            and isinstance(b, int)
            and b > 0
            and abs(a).bit_length() * b > MAX_POW_BITS
        ):
            raise _Fail(f"result of ** would exceed {MAX_POW_BITS} bits")
    return a**b


def _contains(a: Any, b: Any) -> bool:
    return a in b


def _not_contains(a: Any, b: Any) -> bool:
    return a not in b


_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: _mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: _mod,
    ast.Pow: _pow,
}

_OP_SYMBOLS: dict[type[ast.AST], str] = {
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
    ast.Invert: "~",
}

_CMPOPS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: _contains,
    ast.NotIn: _not_contains,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}

# --------------------------------------------------------------------------
# Builtin functions.  Results are JSON-like: anything iterable comes back as a
# list (of lists), never as a lazy iterator or a tuple.
# --------------------------------------------------------------------------


def _range(*args: Any) -> list[int]:
    r = range(*args)
    try:
        n = len(r)
    except OverflowError:
        n = MAX_RANGE_LEN + 1
    if n > MAX_RANGE_LEN:
        raise _Fail(f"range() would produce more than {MAX_RANGE_LEN} items")
    return list(r)


def _enumerate(iterable: Iterable[Any], start: int = 0) -> list[list[Any]]:
    return [[i, v] for i, v in enumerate(iterable, start)]


def _zip(*iterables: Iterable[Any]) -> list[list[Any]]:
    return [list(t) for t in zip(*iterables)]


def _sorted(iterable: Iterable[Any], *, reverse: bool = False) -> list[Any]:
    return sorted(iterable, reverse=reverse)


# name -> (implementation, allowed keyword names or None for "any keyword").
# Keywords are restricted so that no builtin can be handed a callable (e.g.
# ``key=``) taken from the environment.
_BUILTINS: dict[str, tuple[Callable[..., Any], frozenset[str] | None]] = {
    "len": (len, frozenset()),
    "min": (min, frozenset({"default"})),
    "max": (max, frozenset({"default"})),
    "sum": (sum, frozenset({"start"})),
    "abs": (abs, frozenset()),
    "round": (round, frozenset({"ndigits"})),
    "int": (int, frozenset({"base"})),
    "float": (float, frozenset()),
    "str": (str, frozenset()),
    "bool": (bool, frozenset()),
    "sorted": (_sorted, frozenset({"reverse"})),
    "any": (any, frozenset()),
    "all": (all, frozenset()),
    "list": (list, frozenset()),
    "dict": (dict, None),
    "range": (_range, frozenset()),
    "enumerate": (_enumerate, frozenset({"start"})),
    "zip": (_zip, frozenset()),
}

#: Names of the builtin functions callable from expressions.
BUILTIN_FUNCTIONS: frozenset[str] = frozenset(_BUILTINS)

# --------------------------------------------------------------------------
# Whitelisted methods, dispatched on the receiver's runtime type.
# --------------------------------------------------------------------------


def _map_get(m: Mapping[Any, Any], key: Any, default: Any = None) -> Any:
    return m.get(key, default)


def _map_keys(m: Mapping[Any, Any]) -> list[Any]:
    return list(m.keys())


def _map_values(m: Mapping[Any, Any]) -> list[Any]:
    return list(m.values())


def _map_items(m: Mapping[Any, Any]) -> list[list[Any]]:
    return [[k, v] for k, v in m.items()]


_STR_METHODS = (
    "lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith",
    "split", "replace", "join", "title", "isdigit", "count", "find",
)  # fmt: skip
_MAP_METHODS: dict[str, Callable[..., Any]] = {
    "get": _map_get,
    "keys": _map_keys,
    "values": _map_values,
    "items": _map_items,
}
_LIST_METHODS = ("index", "count")

# method name -> {receiver type -> implementation}.  ``dict`` stands for any
# Mapping; subclasses are resolved by isinstance in _resolve_method.
_METHOD_TABLE: dict[str, dict[type, Callable[..., Any]]] = {}
for _m in _STR_METHODS:
    _METHOD_TABLE.setdefault(_m, {})[str] = getattr(str, _m)
for _m, _impl in _MAP_METHODS.items():
    _METHOD_TABLE.setdefault(_m, {})[dict] = _impl
for _m in _LIST_METHODS:
    _METHOD_TABLE.setdefault(_m, {})[list] = getattr(list, _m)
    _METHOD_TABLE[_m][tuple] = getattr(tuple, _m)
del _m, _impl

#: Whitelisted method names per receiver kind.
METHODS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "str": frozenset(_STR_METHODS),
        "dict": frozenset(_MAP_METHODS),
        "list": frozenset(_LIST_METHODS),
    }
)


def _resolve_method(
    table: dict[type, Callable[..., Any]], recv: Any, name: str
) -> Callable[..., Any]:
    """Slow path of method dispatch for receivers that are not exact builtin types."""
    impl = None
    if isinstance(recv, str):
        impl = table.get(str)
    elif isinstance(recv, Mapping):
        impl = table.get(dict)
    elif isinstance(recv, list):
        impl = table.get(list)
    elif isinstance(recv, tuple):
        impl = table.get(tuple)
    if impl is None:
        raise _Fail(f"{_type_name(recv)} value has no method {name!r}")
    return impl


# --------------------------------------------------------------------------
# Nice names for rejected node types.
# --------------------------------------------------------------------------

_FORBIDDEN_NAMES: dict[type[ast.AST], str] = {
    ast.Lambda: "lambda",
    ast.NamedExpr: "assignment expression ':='",
    ast.Starred: "starred expression '*'",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.Set: "set literal (use a list)",
    ast.SetComp: "set comprehension (use a list comprehension)",
    ast.Slice: "slice outside of a subscript",
    ast.FormattedValue: "formatted value outside of an f-string",
}


class _Compiler:
    """Walks an ``ast`` tree once, validating it and building evaluation closures."""

    def __init__(
        self,
        source: str,
        functions: Mapping[str, Callable[..., Any]],
        names: frozenset[str] | None,
        max_nodes: int,
    ) -> None:
        self.source = source
        self.functions = functions
        self.names = names
        self.max_nodes = max_nodes
        self.node_count = 0
        self.depth = 0
        self.locals: frozenset[str] = frozenset()
        self.reads: set[str] = set()
        self.calls: set[str] = set()

    # -- infrastructure ---------------------------------------------------

    def fail(self, problem: str) -> NoReturn:
        raise ExprError(f"{problem} in expression {_quote(self.source)}")

    def count(self) -> None:
        self.node_count += 1
        if self.node_count > self.max_nodes:
            self.fail(f"expression is too complex (more than {self.max_nodes} nodes)")

    def check_name(self, name: str, kind: str) -> None:
        # Every dunder escape route (__class__, __globals__, __import__ ...)
        # starts with '_', so refusing the prefix closes all of them at once.
        if name.startswith("_"):
            self.fail(f"{kind} {name!r} is not allowed (private name)")

    def compile(self, node: ast.AST, chain: bool = False) -> _Fn:
        """Compile ``node``.  ``chain`` is True when ``node`` is the ``.value`` of
        an attribute/subscript, i.e. part of a longer path already recorded."""
        self.count()
        handler = _HANDLERS.get(type(node))
        if handler is None:
            what = _FORBIDDEN_NAMES.get(type(node)) or f"{type(node).__name__} syntax"
            self.fail(f"{what} is not allowed")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"expression is nested too deeply (more than {MAX_DEPTH} levels)")
        try:
            return handler(self, node, chain)
        finally:
            self.depth -= 1

    def record_path(self, node: ast.expr) -> None:
        """Add the dotted path of an attribute/subscript chain to ``reads``."""
        parts: list[str] = []
        cur: ast.expr = node
        while True:
            if isinstance(cur, ast.Attribute):
                parts.append(cur.attr)
                cur = cur.value
            elif isinstance(cur, ast.Subscript):
                sl = cur.slice
                parts.append(sl.value if isinstance(sl, ast.Constant) and isinstance(sl.value, str) else "*")
                cur = cur.value
            else:
                break
        if isinstance(cur, ast.Name) and cur.id not in self.locals:
            parts.append(cur.id)
            self.reads.add(".".join(reversed(parts)))

    # -- leaves -------------------------------------------------------------

    def c_constant(self, node: ast.Constant, chain: bool) -> _Fn:
        value = node.value
        if value is not None and type(value) not in (int, float, str, bool):
            self.fail(f"constant of type {type(value).__name__} is not allowed")
        return lambda env, loc: value

    def c_name(self, node: ast.Name, chain: bool) -> _Fn:
        name = node.id
        self.check_name(name, "name")
        if name in self.locals:

            def local(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Any:
                try:
                    return loc[name]  # type: ignore[index]
                except (KeyError, TypeError):
                    raise _Fail(f"name {name!r} is not defined yet") from None

            return local
        if self.names is not None and name not in self.names:
            self.fail(f"unknown name {name!r}{self._suggest(name, self.names)}")
        if not chain:
            self.reads.add(name)

        def lookup(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Any:
            try:
                return env[name]
            except KeyError:
                raise _Fail(f"name {name!r} is not defined") from None

        return lookup

    @staticmethod
    def _suggest(name: str, candidates: Iterable[str]) -> str:
        pool = sorted(candidates)
        close = difflib.get_close_matches(name, pool, n=1)
        if close:
            return f" (did you mean {close[0]!r}?)"
        if not pool:
            return " (no names are defined)"
        shown = ", ".join(pool[:10]) + (", ..." if len(pool) > 10 else "")
        return f" (known names: {shown})"

    # -- paths ----------------------------------------------------------------

    def c_attribute(self, node: ast.Attribute, chain: bool) -> _Fn:
        attr = node.attr
        self.check_name(attr, "attribute")
        if not chain:
            self.record_path(node)
        value = self.compile(node.value, chain=True)

        def get_attr(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Any:
            obj = value(env, loc)
            if type(obj) is dict:
                return obj.get(attr)
            if obj is None:
                return None
            if isinstance(obj, Mapping):
                return obj.get(attr)
            raise _Fail(f"cannot read attribute {attr!r} of a {_type_name(obj)} value")

        return get_attr

    def c_subscript(self, node: ast.Subscript, chain: bool) -> _Fn:
        if not chain:
            self.record_path(node)
        value = self.compile(node.value, chain=True)
        sl = node.slice
        if isinstance(sl, ast.Slice):
            self.count()
            lo = self.compile(sl.lower) if sl.lower is not None else None
            hi = self.compile(sl.upper) if sl.upper is not None else None
            st = self.compile(sl.step) if sl.step is not None else None

            def get_slice(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Any:
                obj = value(env, loc)
                s = slice(
                    lo(env, loc) if lo is not None else None,
                    hi(env, loc) if hi is not None else None,
                    st(env, loc) if st is not None else None,
                )
                if obj is None:
                    return None
                if isinstance(obj, _SEQUENCES):
                    return obj[s]
                raise _Fail(f"cannot slice a {_type_name(obj)} value")

            return get_slice

        key = self.compile(sl)

        def get_item(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Any:
            obj = value(env, loc)
            k = key(env, loc)
            t = type(obj)
            if t is dict:
                # State documents are canonical JSON: their keys are strings, so an int
                # id looks up the same entry as its decimal text (rt.carts[user]).
                return obj.get(str(k)) if type(k) is int else obj.get(k)
            if t is list or t is str or t is tuple:
                return obj[k]
            if obj is None:
                return None
            if isinstance(obj, Mapping):
                return obj.get(str(k)) if type(k) is int else obj.get(k)
            if isinstance(obj, _SEQUENCES):
                return obj[k]
            raise _Fail(f"cannot subscript a {_type_name(obj)} value")

        return get_item

    # -- operators ------------------------------------------------------------

    def c_binop(self, node: ast.BinOp, chain: bool) -> _Fn:
        op = _BINOPS.get(type(node.op))
        if op is None:
            self.fail(f"operator {_OP_SYMBOLS.get(type(node.op), '?')!r} is not allowed")
        left = self.compile(node.left)
        if isinstance(node.right, ast.Constant):
            self.compile(node.right)  # validates and counts the constant
            const = node.right.value
            return lambda env, loc: op(left(env, loc), const)
        right = self.compile(node.right)
        return lambda env, loc: op(left(env, loc), right(env, loc))

    def c_unaryop(self, node: ast.UnaryOp, chain: bool) -> _Fn:
        operand = self.compile(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env, loc: not operand(env, loc)
        if isinstance(node.op, ast.USub):
            return lambda env, loc: -operand(env, loc)
        if isinstance(node.op, ast.UAdd):
            return lambda env, loc: +operand(env, loc)
        self.fail(f"operator {_OP_SYMBOLS.get(type(node.op), '?')!r} is not allowed")

    def c_boolop(self, node: ast.BoolOp, chain: bool) -> _Fn:
        fns = [self.compile(v) for v in node.values]
        is_and = isinstance(node.op, ast.And)
        if len(fns) == 2:
            a, b = fns
            if is_and:
                return lambda env, loc: a(env, loc) and b(env, loc)
            return lambda env, loc: a(env, loc) or b(env, loc)
        head, last = fns[:-1], fns[-1]

        def chain_and(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Any:
            for fn in head:
                v = fn(env, loc)
                if not v:
                    return v
            return last(env, loc)

        def chain_or(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Any:
            for fn in head:
                v = fn(env, loc)
                if v:
                    return v
            return last(env, loc)

        return chain_and if is_and else chain_or

    def c_compare(self, node: ast.Compare, chain: bool) -> _Fn:
        operands = [node.left, *node.comparators]
        for i, cmp in enumerate(node.ops):
            if isinstance(cmp, (ast.Is, ast.IsNot)):
                if not (_is_none(operands[i]) or _is_none(operands[i + 1])):
                    self.fail(
                        "'is' comparisons are only allowed with None "
                        "('x is None' / 'x is not None'); use '==' otherwise"
                    )
        ops = [_CMPOPS[type(c)] for c in node.ops]
        fns = [self.compile(o) for o in operands]

        if len(ops) == 1:
            op = ops[0]
            a, b = fns
            left_node, right_node = operands
            # Specialise the very common 'x is None' / 'x is not None' / 'x < 3'.
            if op is operator.is_ and _is_none(right_node):
                return lambda env, loc: a(env, loc) is None
            if op is operator.is_not and _is_none(right_node):
                return lambda env, loc: a(env, loc) is not None
            if op is operator.is_ and _is_none(left_node):
                return lambda env, loc: b(env, loc) is None
            if op is operator.is_not and _is_none(left_node):
                return lambda env, loc: b(env, loc) is not None
            if isinstance(right_node, ast.Constant):
                const = right_node.value
                return lambda env, loc: op(a(env, loc), const)
            return lambda env, loc: op(a(env, loc), b(env, loc))

        first, rest = fns[0], list(zip(ops, fns[1:]))

        def chained(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Any:
            left = first(env, loc)
            result: Any = True
            for op, fn in rest:
                right = fn(env, loc)
                result = op(left, right)
                if not result:
                    return result
                left = right
            return result

        return chained

    def c_ifexp(self, node: ast.IfExp, chain: bool) -> _Fn:
        test = self.compile(node.test)
        body = self.compile(node.body)
        orelse = self.compile(node.orelse)
        return lambda env, loc: body(env, loc) if test(env, loc) else orelse(env, loc)

    # -- containers -----------------------------------------------------------

    def c_list(self, node: ast.List | ast.Tuple, chain: bool) -> _Fn:
        fns = [self.compile(e) for e in node.elts]
        return lambda env, loc: [fn(env, loc) for fn in fns]

    def c_dict(self, node: ast.Dict, chain: bool) -> _Fn:
        pairs = []
        for k, v in zip(node.keys, node.values):
            if k is None:
                self.fail("dict unpacking '**' is not allowed")
            pairs.append((self.compile(k), self.compile(v)))
        return lambda env, loc: {k(env, loc): v(env, loc) for k, v in pairs}

    def c_joinedstr(self, node: ast.JoinedStr, chain: bool) -> _Fn:
        parts: list[_Fn] = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                self.count()
                parts.append(_constant(part.value))
                continue
            if not isinstance(part, ast.FormattedValue):  # pragma: no cover - parser guarantees
                self.fail("unexpected f-string part")
            self.count()
            if part.conversion != -1:
                self.fail(f"f-string conversion '!{chr(part.conversion)}' is not allowed")
            spec = self._format_spec(part.format_spec)
            value = self.compile(part.value)
            parts.append(_formatted(value, spec))
        return lambda env, loc: "".join([p(env, loc) for p in parts])

    def _format_spec(self, spec_node: ast.expr | None) -> str:
        if spec_node is None:
            return ""
        # A literal spec parses as a JoinedStr made only of Constants; anything
        # else is a nested replacement field like '{x:{width}}'.
        values = getattr(spec_node, "values", None)
        if not isinstance(spec_node, ast.JoinedStr) or not all(
            isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values or []
        ):
            self.fail("f-string format spec must be a literal string")
        spec = "".join(v.value for v in spec_node.values)  # type: ignore[attr-defined]
        if any(int(n) > MAX_FORMAT_NUMBER for n in re.findall(r"\d+", spec)):
            self.fail(f"f-string format spec {spec!r} is too wide (limit {MAX_FORMAT_NUMBER})")
        return spec

    # -- comprehensions -------------------------------------------------------

    def _comprehension(
        self, generators: list[ast.comprehension], elements: list[ast.expr]
    ) -> tuple[Callable[[Mapping[str, Any], dict[str, Any] | None], Iterator[Any]], list[_Fn]]:
        """Compile the ``for``/``if`` clauses and the element expressions.

        Returns a generator function yielding once per accepted binding (with
        the bindings stored in the shared inner locals dict) and the compiled
        element closures, which must be called with that dict.
        """
        targets: list[tuple[str, ...]] = []
        for gen in generators:
            self.count()
            if gen.is_async:
                self.fail("async comprehension is not allowed")
            targets.append(self._target_names(gen.target))

        outer_locals = self.locals
        # As in Python, the first iterable is evaluated in the enclosing scope;
        # everything else sees all of the comprehension's variables.
        first_iter = self.compile(generators[0].iter)
        self.locals = outer_locals.union(*targets)
        try:
            clauses = []
            for i, gen in enumerate(generators):
                it = first_iter if i == 0 else self.compile(gen.iter)
                ifs = [self.compile(cond) for cond in gen.ifs]
                clauses.append((it, targets[i], ifs))
            elts = [self.compile(e) for e in elements]
        finally:
            self.locals = outer_locals

        last = len(clauses) - 1
        limit = MAX_COMPREHENSION_ITERATIONS

        def run(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
            inner: dict[str, Any] = {} if loc is None else dict(loc)
            budget = [limit]

            def walk(i: int, scope: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
                it, names, ifs = clauses[i]
                for item in it(env, scope):
                    budget[0] -= 1
                    if budget[0] < 0:
                        raise _Fail(f"comprehension ran more than {limit} iterations")
                    if len(names) == 1:
                        inner[names[0]] = item
                    else:
                        _unpack(inner, names, item)
                    for cond in ifs:
                        if not cond(env, inner):
                            break
                    else:
                        if i == last:
                            yield inner
                        else:
                            yield from walk(i + 1, inner)

            return walk(0, loc)

        return run, elts

    def _target_names(self, target: ast.expr) -> tuple[str, ...]:
        self.count()
        if isinstance(target, ast.Name):
            self.check_name(target.id, "name")
            return (target.id,)
        if isinstance(target, (ast.Tuple, ast.List)):
            names = []
            for elt in target.elts:
                self.count()
                if not isinstance(elt, ast.Name):
                    self.fail("comprehension targets must be a name or a tuple of names")
                self.check_name(elt.id, "name")
                names.append(elt.id)
            return tuple(names)
        self.fail("comprehension targets must be a name or a tuple of names")

    def _lazy_comprehension(self, node: ast.GeneratorExp) -> _Fn:
        """A generator expression that stays lazy (used for any()/all())."""
        run, (elt,) = self._comprehension(node.generators, [node.elt])
        return lambda env, loc: (elt(env, inner) for inner in run(env, loc))

    def c_listcomp(self, node: ast.ListComp | ast.GeneratorExp, chain: bool) -> _Fn:
        run, (elt,) = self._comprehension(node.generators, [node.elt])
        return lambda env, loc: [elt(env, inner) for inner in run(env, loc)]

    def c_dictcomp(self, node: ast.DictComp, chain: bool) -> _Fn:
        run, (key, value) = self._comprehension(node.generators, [node.key, node.value])
        return lambda env, loc: {key(env, inner): value(env, inner) for inner in run(env, loc)}

    # -- calls ------------------------------------------------------------------

    def _call_args(self, node: ast.Call) -> tuple[list[_Fn], dict[str, _Fn]]:
        args = [self.compile(a) for a in node.args]
        kwargs: dict[str, _Fn] = {}
        for kw in node.keywords:
            self.count()
            if kw.arg is None:
                self.fail("keyword unpacking '**' is not allowed")
            self.check_name(kw.arg, "keyword")
            kwargs[kw.arg] = self.compile(kw.value)
        return args, kwargs

    def c_call(self, node: ast.Call, chain: bool) -> _Fn:
        func = node.func
        if isinstance(func, ast.Name):
            self.count()
            self.check_name(func.id, "function")
            return self._function_call(func.id, node)
        if isinstance(func, ast.Attribute):
            self.count()
            self.check_name(func.attr, "method")
            return self._method_call(func, node)
        self.fail("only registered functions, builtins and whitelisted methods can be called")

    def _function_call(self, name: str, node: ast.Call) -> _Fn:
        if name in self.functions:
            # A registered function wins over a builtin of the same name.
            fn = self.functions[name]
            registered = True
        elif name in _BUILTINS:
            fn, allowed_kw = _BUILTINS[name]
            registered = False
            for kw in node.keywords:
                if kw.arg is not None and allowed_kw is not None and kw.arg not in allowed_kw:
                    allowed = ", ".join(sorted(allowed_kw)) or "none"
                    self.fail(f"keyword {kw.arg!r} is not allowed for {name}() (allowed: {allowed})")
        else:
            registered_names = ", ".join(sorted(self.functions)) or "none"
            hint = ""
            close = difflib.get_close_matches(name, [*self.functions, *_BUILTINS], n=1)
            if close:
                hint = f"; did you mean {close[0]!r}?"
            self.fail(f"function {name!r} is not registered (registered: {registered_names}){hint}")
        self.calls.add(name)

        if (
            not registered
            and name in ("any", "all")
            and len(node.args) == 1
            and not node.keywords
            and isinstance(node.args[0], ast.GeneratorExp)
        ):
            # Keep any()/all() short-circuiting over a generator, as in Python.
            self.count()
            gen = self._lazy_comprehension(node.args[0])
            return lambda env, loc: fn(gen(env, loc))

        args, kwargs = self._call_args(node)

        if not registered:
            # Builtin failures are ordinary Python errors; Expr.__call__ wraps them.
            if not kwargs and len(args) == 1:
                (a,) = args
                return lambda env, loc: fn(a(env, loc))
            return lambda env, loc: fn(
                *[a(env, loc) for a in args], **{k: v(env, loc) for k, v in kwargs.items()}
            )

        def call_registered(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Any:
            pos = [a(env, loc) for a in args]
            kw = {k: v(env, loc) for k, v in kwargs.items()}
            try:
                return fn(*pos, **kw)
            except Exception as exc:  # any failure of user code is an evaluation error
                raise _Fail(
                    f"function {name!r} raised {type(exc).__name__}: {_one_line(exc)}"
                ) from exc

        return call_registered

    def _method_call(self, func: ast.Attribute, node: ast.Call) -> _Fn:
        name = func.attr
        table = _METHOD_TABLE.get(name)
        if table is None:
            allowed = ", ".join(sorted(_METHOD_TABLE))
            self.fail(f"method {name!r} is not allowed (allowed methods: {allowed})")
        # The receiver is a separate path: 'rt.name.lower()' reads 'rt.name'.
        receiver = self.compile(func.value)
        args, kwargs = self._call_args(node)

        def call_method(env: Mapping[str, Any], loc: dict[str, Any] | None) -> Any:
            recv = receiver(env, loc)
            if recv is None:
                return None  # null-safe, like attribute access
            impl = table.get(type(recv))
            if impl is None:
                impl = _resolve_method(table, recv, name)
            if kwargs:
                return impl(
                    recv,
                    *[a(env, loc) for a in args],
                    **{k: v(env, loc) for k, v in kwargs.items()},
                )
            return impl(recv, *[a(env, loc) for a in args])

        return call_method


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _unpack(inner: dict[str, Any], names: tuple[str, ...], item: Any) -> None:
    values = tuple(item)
    if len(values) != len(names):
        raise _Fail(f"expected {len(names)} values to unpack, got {len(values)}")
    for n, v in zip(names, values):
        inner[n] = v


_HANDLERS: dict[type[ast.AST], Callable[[_Compiler, Any, bool], _Fn]] = {
    ast.Constant: _Compiler.c_constant,
    ast.Name: _Compiler.c_name,
    ast.Attribute: _Compiler.c_attribute,
    ast.Subscript: _Compiler.c_subscript,
    ast.BinOp: _Compiler.c_binop,
    ast.UnaryOp: _Compiler.c_unaryop,
    ast.BoolOp: _Compiler.c_boolop,
    ast.Compare: _Compiler.c_compare,
    ast.IfExp: _Compiler.c_ifexp,
    ast.List: _Compiler.c_list,
    ast.Tuple: _Compiler.c_list,
    ast.Dict: _Compiler.c_dict,
    ast.JoinedStr: _Compiler.c_joinedstr,
    ast.ListComp: _Compiler.c_listcomp,
    ast.GeneratorExp: _Compiler.c_listcomp,
    ast.DictComp: _Compiler.c_dictcomp,
    ast.Call: _Compiler.c_call,
}


class Expr:
    """A compiled expression; call it with an environment mapping to evaluate.

    Attributes:
        source: the expression text as given.
        reads: dotted paths the expression reads from the environment, derived
            statically.  Each maximal chain of attribute accesses and
            subscripts that starts at an environment name (not a comprehension
            variable) becomes one path: an attribute adds its name, a
            string-literal subscript adds the string, any other subscript
            (variable, int literal, slice) adds ``*``.  So
            ``rt.carts[user].items`` reads ``"rt.carts.*.items"`` and
            ``"user"``.  A method call ends a chain and is not part of it
            (``rt.name.lower()`` reads ``"rt.name"``).  Reads inside
            comprehensions count normally, except paths rooted at the
            comprehension's own variables.
        calls: names of the functions called (registered functions and
            builtins such as ``len``; methods are not included).
    """

    __slots__ = ("source", "reads", "calls", "_fn")

    def __init__(self, source: str, fn: _Fn, reads: frozenset[str], calls: frozenset[str]) -> None:
        self.source = source
        self.reads = reads
        self.calls = calls
        self._fn = fn

    def __call__(self, env: Mapping[str, Any]) -> Any:
        """Evaluate against ``env``; raises :class:`ExprRuntimeError` on failure."""
        try:
            return self._fn(env, None)
        except _Fail as exc:
            raise ExprRuntimeError(f"{exc} in expression {_quote(self.source)}") from exc.__cause__
        except Exception as exc:
            # TypeError, ZeroDivisionError, IndexError, ValueError, OverflowError,
            # RecursionError, errors from a custom env Mapping, ...: callers only
            # need to handle one exception type.
            raise ExprRuntimeError(
                f"{type(exc).__name__}: {_one_line(exc)} in expression {_quote(self.source)}"
            ) from exc

    def __repr__(self) -> str:
        return f"Expr({self.source!r})"


def compile_expr(
    source: str,
    *,
    functions: Mapping[str, Callable[..., Any]] = _EMPTY,
    names: Iterable[str] | None = None,
    max_length: int = 2000,
    max_nodes: int = 400,
) -> Expr:
    """Compile ``source`` into an :class:`Expr`.

    Args:
        source: the expression text (Python expression syntax, restricted).
        functions: functions callable by name from the expression.  They are
            resolved now; a name that is both registered and a builtin calls
            the registered function.
        names: if given, the environment names the expression may use; any
            other (non-comprehension) name is rejected with a suggestion.
        max_length: maximum length of ``source`` in characters.
        max_nodes: maximum number of syntax nodes.

    Raises:
        ExprError: the expression is malformed, uses a construct outside the
            language, or exceeds a limit.
    """
    if not isinstance(source, str):
        raise ExprError(f"expression must be a string, got {type(source).__name__}: {source!r:.100}")
    quoted = _quote(source)
    if len(source) > max_length:
        raise ExprError(
            f"expression is too long ({len(source)} characters, limit {max_length}) "
            f"in expression {quoted}"
        )
    # Leading whitespace is an IndentationError for ast.parse (in "eval" mode
    # too); YAML block scalars easily produce it, so tolerate it.
    text = source.strip()
    if not text:
        raise ExprError(f"expression is empty in expression {quoted}")
    try:
        # The parser warns about things like '1and' or 'x is 1'; the language
        # reports its own errors, so keep that noise off stderr.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        where = ""
        if exc.offset is not None:
            # The tokenizer reports offset 0 for errors at end of input.
            col = exc.offset or len(text) + 1
            if (exc.lineno or 1) == 1:
                col += len(source) - len(source.lstrip())
                where = f" (column {col})"
            else:
                where = f" (line {exc.lineno}, column {col})"
        raise ExprError(f"syntax error: {_one_line(exc.msg)}{where} in expression {quoted}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        # null bytes (ValueError on some versions) and pathological nesting
        raise ExprError(f"cannot parse: {_one_line(exc)} in expression {quoted}") from None

    compiler = _Compiler(
        source,
        functions,
        frozenset(names) if names is not None else None,
        max_nodes,
    )
    try:
        fn = compiler.compile(tree.body)
    except RecursionError:
        # Only reachable with a huge max_nodes; MAX_DEPTH normally stops first.
        raise ExprError(f"expression is nested too deeply in expression {quoted}") from None
    return Expr(source, fn, frozenset(compiler.reads), frozenset(compiler.calls))
