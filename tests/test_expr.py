"""Tests for simweb.expr: the safe expression language used by app specs."""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simweb.core.expr as expr_module
from simweb.core.expr import Expr, ExprError, ExprRuntimeError, compile_expr

# Python builtins made visible to the reference oracle.  Only ones whose
# results have the same shape in both languages are used by the generators
# (e.g. range() only ever appears wrapped in list()).
SAFE_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in (
        "len", "min", "max", "abs", "sum", "sorted", "any", "all", "list", "range", "zip",
        "enumerate",
    )
}  # fmt: skip

# Exceptions the oracle may raise for well-formed generated expressions; in
# that case the expression language must raise ExprRuntimeError.
ORACLE_ERRORS = (ArithmeticError, LookupError, ValueError, TypeError, UnboundLocalError)

PROPERTY_SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def reference_eval(source: str, env: Mapping[str, Any]) -> Any:
    # Everything goes into globals: names used inside a comprehension body are
    # looked up as globals by Python, so an eval() locals mapping would not be
    # visible there.
    return eval(source, {"__builtins__": {}, **SAFE_BUILTINS, **env})  # noqa: S307 - test oracle


def outcome(fn: Any) -> tuple[str, Any]:
    """Run ``fn`` and describe the result as ('ok', repr) or ('error', type)."""
    try:
        return ("ok", repr(fn()))
    except ORACLE_ERRORS as exc:
        return ("error", type(exc))


# ---------------------------------------------------------------------------
# Random expression generators (typed, so the oracle comparison is meaningful
# and sizes stay small).  Each returns source text; compound forms are fully
# parenthesised so operator precedence never depends on the context.
# ---------------------------------------------------------------------------

INT_VARS = ("a", "b", "c")
LIST_VARS = ("xs", "ys")
# 'a' is also an env name: a comprehension over it must shadow the env value.
COMP_VARS = ("v", "w", "a")

int_literals = st.integers(-30, 30).map(str)


@functools.cache
def ints(depth: int, local: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    leaves = st.one_of(int_literals, st.sampled_from(INT_VARS + local))
    if depth <= 0:
        return leaves
    i, b, lst = ints(depth - 1, local), bools(depth - 1, local), lists(depth - 1, local)
    return st.one_of(
        leaves,
        st.tuples(i, st.sampled_from(["+", "-", "*", "//", "%"]), i).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        i.map(lambda x: f"(-{x})"),
        i.map(lambda x: f"abs({x})"),
        lst.map(lambda x: f"len({x})"),
        lst.map(lambda x: f"min({x})"),
        lst.map(lambda x: f"max({x})"),
        lst.map(lambda x: f"sum({x})"),
        st.tuples(i, i).map(lambda t: f"max({t[0]}, {t[1]})"),
        st.tuples(i, b, i).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(i, st.sampled_from(["and", "or"]), i).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(lst, i).map(lambda t: f"{t[0]}[{t[1]}]"),
    )


@functools.cache
def bools(depth: int, local: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    leaves = st.sampled_from(["True", "False"])
    if depth <= 0:
        return leaves
    i, b, lst = ints(depth - 1, local), bools(depth - 1, local), lists(depth - 1, local)
    cmp = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
    return st.one_of(
        leaves,
        st.tuples(i, cmp, i).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(i, cmp, i, cmp, i).map(lambda t: f"({' '.join(t)})"),
        st.tuples(i, st.sampled_from(["in", "not in"]), lst).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        b.map(lambda x: f"(not {x})"),
        st.tuples(b, st.sampled_from(["and", "or"]), b).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        lst.map(lambda x: f"any({x})"),
        comprehension(depth, local, "all"),
    )


@functools.cache
def lists(depth: int, local: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    i0 = ints(0, local)
    leaves = st.one_of(
        st.sampled_from(LIST_VARS + ("[]",)),
        st.lists(i0, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
    )
    if depth <= 0:
        return leaves
    i, lst = ints(depth - 1, local), lists(depth - 1, local)
    return st.one_of(
        leaves,
        st.tuples(lst, lst).map(lambda t: f"({t[0]} + {t[1]})"),
        lst.map(lambda x: f"sorted({x})"),
        lst.map(lambda x: f"sorted({x}, reverse=True)"),
        st.tuples(lst, i, i).map(lambda t: f"{t[0]}[{t[1]}:{t[2]}]"),
        i.map(lambda x: f"list(range({x} % 6))"),
        st.tuples(lst, lst).map(lambda t: f"[p + q for p, q in zip({t[0]}, {t[1]})]"),
        lst.map(lambda x: f"[k * e for k, e in enumerate({x})]"),
        comprehension(depth, local, "list"),
    )


def comprehension(depth: int, local: tuple[str, ...], kind: str) -> st.SearchStrategy[str]:
    """List comprehensions (one or two ``for`` clauses, optional ``if``)."""

    @st.composite
    def build(draw: st.DrawFn) -> str:
        var = draw(st.sampled_from(COMP_VARS))
        inner = tuple(sorted(set(local) | {var}))
        iterable = draw(lists(depth - 1, local))
        clauses = f"for {var} in {iterable}"
        if draw(st.booleans()):
            var2 = draw(st.sampled_from([v for v in COMP_VARS if v != var]))
            # The second iterable is kept tiny so nested loops stay small.
            clauses += f" for {var2} in {draw(lists(0, inner))}"
            inner = tuple(sorted(set(inner) | {var2}))
        if draw(st.booleans()):
            clauses += f" if {draw(bools(depth - 1, inner))}"
        if kind == "all":
            return f"all({draw(ints(depth - 1, inner))} > 0 {clauses})"
        return f"[{draw(ints(depth - 1, inner))} {clauses}]"

    return build()


small_int_lists = st.lists(st.integers(-20, 20), max_size=4)
envs = st.fixed_dictionaries(
    {
        "a": st.integers(-50, 50),
        "b": st.integers(-50, 50),
        "c": st.integers(-3, 3),
        "xs": small_int_lists,
        "ys": small_int_lists,
    }
)


def assert_matches_python(source: str, env: dict[str, Any]) -> None:
    compiled = compile_expr(source, max_nodes=10_000, max_length=100_000)
    expected = outcome(lambda: reference_eval(source, env))
    try:
        actual: tuple[str, Any] = ("ok", repr(compiled(env)))
    except ExprRuntimeError:
        actual = ("error", None)
    if expected[0] == "error":
        assert actual[0] == "error", (source, env, expected, actual)
    else:
        assert actual == expected, (source, env)


# ---------------------------------------------------------------------------
# Property tests against Python as the reference
# ---------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(source=ints(3), env=envs)
def test_int_expressions_match_python(source: str, env: dict[str, Any]) -> None:
    assert_matches_python(source, env)


@PROPERTY_SETTINGS
@given(source=bools(3), env=envs)
def test_bool_expressions_match_python(source: str, env: dict[str, Any]) -> None:
    assert_matches_python(source, env)


@PROPERTY_SETTINGS
@given(source=lists(3), env=envs)
def test_list_expressions_match_python(source: str, env: dict[str, Any]) -> None:
    assert_matches_python(source, env)


@settings(max_examples=200, deadline=None)
@given(
    left=st.integers(-1000, 1000),
    right=st.integers(-5, 5),
    op=st.sampled_from(["+", "-", "*", "/", "//", "%", "**"]),
)
def test_binary_operators_including_division_by_zero(left: int, right: int, op: str) -> None:
    assert_matches_python(f"a {op} b", {"a": left, "b": right})


# Arbitrary nested JSON-like data for the null-safe path semantics.
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["s", "t"]))
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
    ),
    max_leaves=12,
)


def walk_path(value: Any, keys: list[str]) -> tuple[str, Any]:
    """Reference semantics of ``root.k1.k2...``: mappings use .get, None stays None."""
    for key in keys:
        if value is None:
            return ("ok", None)
        if isinstance(value, Mapping):
            value = value.get(key)
        else:
            return ("error", None)
    return ("ok", value)


@settings(max_examples=300, deadline=None)
@given(root=json_values, keys=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4))
def test_attribute_paths_are_null_safe(root: Any, keys: list[str]) -> None:
    expected = walk_path(root, keys)
    for source in ("root." + ".".join(keys), "root" + "".join(f"[{k!r}]" for k in keys)):
        compiled = compile_expr(source)
        try:
            actual: tuple[str, Any] = ("ok", compiled({"root": root}))
        except ExprRuntimeError:
            actual = ("error", None)
        # A str key on a list/str/number is an error in both forms.
        assert actual == expected, source


expression_alphabet = st.sampled_from(
    list("abxy_019 .,:()[]{}+-*/%<>=!'\"fi\n")
    + ["and", "or", "not", "in", "is", "None", "for", "if", "else", "lambda", "len(", "**"]
    + ["__class__", "x.get(", ".lower()", "f'{", "}'", "range(", "sorted(", "[v for v in "]
)


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(expression_alphabet, max_size=25))
def test_arbitrary_text_only_raises_expr_errors(pieces: list[str]) -> None:
    source = "".join(pieces)
    try:
        compiled = compile_expr(source)
    except ExprError as exc:
        assert "\n" not in str(exc)
        return
    env = {"a": 1, "b": "bee", "x": {"a": [1, 2]}, "y": None, "i": 2, "f": 0.5, "xs": [3]}
    try:
        compiled(env)
    except ExprRuntimeError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=100, deadline=None)
@given(
    name=st.from_regex(r"_[A-Za-z0-9_]{0,10}", fullmatch=True),
    template=st.sampled_from(["{}", "x.{}", "x.{}()", "{}(1)", "[{} for {} in x]", "f(k={})"]),
)
def test_private_names_are_always_rejected(name: str, template: str) -> None:
    source = template.replace("k={}", f"{name}=1").format(name, name)
    with pytest.raises(ExprError, match="private name"):
        compile_expr(source, functions={"f": lambda **kw: kw})


# ---------------------------------------------------------------------------
# Semantics
# ---------------------------------------------------------------------------

SHOP_ENV: dict[str, Any] = {
    "user": "u1",
    "rt": {
        "carts": {"u1": {"items": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1}]}},
        "name": "  Alice Smith ",
        "stock": {"a": 5, "b": 0},
    },
    "params": {"sku": "a", "qty": 3, "price": 2.5},
}


def run(source: str, env: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
    return compile_expr(source, **kwargs)(SHOP_ENV if env is None else env)


def test_guard_example() -> None:
    guard = compile_expr("user is not None and len(rt.carts[user].items) < 50")
    assert guard(SHOP_ENV) is True
    assert guard({**SHOP_ENV, "user": None}) is False
    # Missing cart: null-safe chain gives None and len(None) is a runtime error.
    with pytest.raises(ExprRuntimeError, match="NoneType"):
        guard({**SHOP_ENV, "user": "nobody"})


def test_null_safe_attribute_and_subscript() -> None:
    assert run("rt.carts['nobody'].items") is None
    assert run("rt.carts[user].items[0].sku") == "a"
    assert run("rt.missing.deeper.still") is None
    assert run("rt.missing[3]") is None
    assert run("rt.missing[1:2]") is None
    assert run("rt['stock']['b']") == 0
    assert run("params.qty * params.price") == 7.5
    assert run("rt.carts[user].items[-1].qty") == 1
    assert run("rt.name[2:7]") == "Alice"
    assert run("[1, 2, 3, 4][::2]") == [1, 3]


def test_attribute_on_non_mapping_is_runtime_error() -> None:
    with pytest.raises(ExprRuntimeError, match="cannot read attribute 'upper' of a str value"):
        run("rt.name.upper")
    with pytest.raises(ExprRuntimeError, match="cannot read attribute 'x' of a list value"):
        run("rt.carts[user].items.x")
    with pytest.raises(ExprRuntimeError, match="cannot subscript a int value"):
        run("params.qty[0]")


def test_custom_mapping_types_are_mappings() -> None:
    class Lazy(Mapping[str, Any]):
        def __init__(self, data: dict[str, Any]) -> None:
            self._data = data

        def __getitem__(self, key: str) -> Any:
            return self._data[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self._data)

        def __len__(self) -> int:
            return len(self._data)

    env = MappingProxyType({"obj": Lazy({"a": Lazy({"b": 7})})})
    assert run("obj.a.b", env) == 7
    assert run("obj.a['b']", env) == 7
    assert run("obj.zzz", env) is None
    assert run("obj.a.get('b')", env) == 7
    assert run("obj.a.items()", env) == [["b", 7]]


def test_unknown_env_name_at_runtime() -> None:
    with pytest.raises(ExprRuntimeError, match="name 'nope' is not defined"):
        run("nope + 1")


def test_literals_and_containers() -> None:
    assert run("(1, 'a', None, True, 2.5)") == [1, "a", None, True, 2.5]
    assert run("{'k': 1, user: [2]}") == {"k": 1, "u1": [2]}
    assert run("[]") == []
    assert run("{}") == {}


def test_boolean_operators_return_operands() -> None:
    assert run("0 or 'x'") == "x"
    assert run("'' and 1/0") == ""
    assert run("1 and 2 and 3") == 3
    assert run("0 or '' or None") is None
    assert run("not []") is True


def test_comparisons() -> None:
    assert run("1 < 2 < 3 <= 3") is True
    assert run("3 > 2 > 2") is False
    assert run("'a' in rt.stock and 'z' not in rt.stock") is True
    assert run("rt.missing is None and user is not None") is True
    assert run("None is rt.missing") is True
    assert run("params.qty if params.qty > 1 else 0") == 3


def test_fstrings() -> None:
    assert run("f'{params.price:.2f} for {user}'") == "2.50 for u1"
    assert run("f'{params.qty:>4}|'") == "   3|"
    assert run("f'total={params.qty * params.price}'") == "total=7.5"
    assert run("f'{rt.missing}'") == "None"


def test_string_methods() -> None:
    assert run("rt.name.strip().lower()") == "alice smith"
    assert run("rt.name.strip().split(' ')") == ["Alice", "Smith"]
    assert run("', '.join(['a', 'b'])") == "a, b"
    assert run("'abc'.startswith('ab') and 'abc'.endswith('c')") is True
    assert run("'a-b'.replace('-', '+').upper()") == "A+B"
    assert run("'12'.isdigit() and not 'x1'.isdigit()") is True
    assert run("'banana'.count('a') + 'banana'.find('n')") == 5
    assert run("'hello world'.title()") == "Hello World"
    assert run("'xxhixx'.lstrip('x').rstrip('x')") == "hi"
    assert run("'a,b,c'.split(',', maxsplit=1)") == ["a", "b,c"]


def test_mapping_and_list_methods() -> None:
    assert run("rt.stock.get('a')") == 5
    assert run("rt.stock.get('zz', 0)") == 0
    assert run("rt.stock.keys()") == ["a", "b"]
    assert run("rt.stock.values()") == [5, 0]
    assert run("rt.stock.items()") == [["a", 5], ["b", 0]]
    assert run("[3, 4, 3].count(3) + [3, 4].index(4)") == 3
    # Method calls on a missing value are null-safe like attribute access.
    assert run("rt.missing.lower()") is None


def test_method_on_wrong_receiver_type_is_runtime_error() -> None:
    with pytest.raises(ExprRuntimeError, match="list value has no method 'lower'"):
        run("[1].lower()")
    with pytest.raises(ExprRuntimeError, match="str value has no method 'get'"):
        run("'s'.get('a')")
    with pytest.raises(ExprRuntimeError, match="int value has no method 'count'"):
        run("params.qty.count(1)")


def test_comprehensions() -> None:
    assert run("[i.sku for i in rt.carts[user].items if i.qty > 1]") == ["a"]
    assert run("sum(i.qty for i in rt.carts[user].items)") == 3
    assert run("[x * y for x in [1, 2] for y in [10, 20] if x < 2]") == [10, 20]
    assert run("[[x, y] for x, y in [[1, 2], [3, 4]]]") == [[1, 2], [3, 4]]
    assert run("[k for k, v in rt.stock.items() if v]") == ["a"]
    assert run("{i.sku: i.qty for i in rt.carts[user].items}") == {"a": 2, "b": 1}
    assert run("{k: v * 2 for k, v in {'a': 1}.items()}") == {"a": 2}
    assert run("(x + 1 for x in [1, 2])") == [2, 3]  # generators evaluate to lists
    assert run("[[y for y in range(x)] for x in range(3)]") == [[], [0], [0, 1]]


def test_comprehension_variables_shadow_and_do_not_leak() -> None:
    env = {"x": 100, "xs": [1, 2]}
    assert run("[x for x in xs]", env) == [1, 2]
    assert run("[x for x in xs] + [x]", env) == [1, 2, 100]
    # The first iterable is evaluated in the enclosing scope, as in Python.
    assert run("[x for x in x]", {"x": [7, 8]}) == [7, 8]
    # Comprehension variables need not be declared in names=.
    assert compile_expr("[i for i in xs]", names=["xs"])(env) == [1, 2]


def test_any_all_short_circuit_over_generators() -> None:
    assert run("any(1 / x > 0 for x in [1, 0])") is True
    assert run("all(1 / x > 5 for x in [1, 0])") is False
    with pytest.raises(ExprRuntimeError, match="ZeroDivisionError"):
        run("any([1 / x > 0 for x in [1, 0]])")


def test_builtins() -> None:
    assert run("len('abc') + abs(-2) + round(2.6) + int('7') + int('ff', base=16)") == 3 + 2 + 3 + 7 + 255
    assert run("min(3, 1, 2) + max([4, 5]) + sum([1, 2], start=10)") == 1 + 5 + 13
    assert run("max([], default=-1)") == -1
    assert run("round(2.567, ndigits=1)") == 2.6
    assert run("float('1.5') + bool(0)") == 1.5
    assert run("str(12) + str(None)") == "12None"
    assert run("sorted([3, 1, 2])") == [1, 2, 3]
    assert run("sorted([3, 1, 2], reverse=True)") == [3, 2, 1]
    assert run("any([0, 1]) and not all([0, 1])") is True
    assert run("list('ab') + list(rt.stock)") == ["a", "b", "a", "b"]
    assert run("dict([['a', 1]], b=2)") == {"a": 1, "b": 2}
    assert run("range(2, 8, 3)") == [2, 5]
    assert run("enumerate(['a', 'b'], start=1)") == [[1, "a"], [2, "b"]]
    assert run("zip([1, 2], 'ab')") == [[1, "a"], [2, "b"]]


def test_registered_functions_and_kwargs() -> None:
    def price(sku: str, qty: int = 1, *, discount: float = 0.0) -> float:
        return {"a": 10.0, "b": 4.0}[sku] * qty * (1 - discount)

    functions: dict[str, Callable[..., Any]] = {"price": price, "now": lambda: 1234}
    compiled = compile_expr("price(params.sku, qty=params.qty, discount=0.5) + now()", functions=functions)
    assert compiled(SHOP_ENV) == 15.0 + 1234
    assert compiled.calls == frozenset({"price", "now"})

    failing = compile_expr("price('zzz')", functions=functions)
    with pytest.raises(ExprRuntimeError, match="function 'price' raised KeyError") as info:
        failing(SHOP_ENV)
    assert isinstance(info.value.__cause__, KeyError)


def test_registered_function_wins_over_builtin() -> None:
    compiled = compile_expr("len(x)", functions={"len": lambda v: "mine"})
    assert compiled({"x": [1, 2]}) == "mine"


def test_registered_functions_resolved_at_compile_time() -> None:
    functions = {"f": lambda: 1}
    compiled = compile_expr("f()", functions=functions)
    functions["f"] = lambda: 2
    assert compiled({}) == 1


def test_leading_and_trailing_whitespace_is_accepted() -> None:
    assert run("  1 + 1\n") == 2


# ---------------------------------------------------------------------------
# Compile-time rejections
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("x.__class__", "attribute '__class__' is not allowed (private name) in expression 'x.__class__'"),
        ("_private", "name '_private' is not allowed (private name)"),
        ("().__class__.__bases__", "is not allowed (private name)"),
        ("open('f')", "function 'open' is not registered (registered: none)"),
        ("__import__('os')", "'__import__' is not allowed (private name)"),
        ("lambda: 1", "lambda is not allowed"),
        ("(y := 1)", "assignment expression ':=' is not allowed"),
        ("{1, 2}", "set literal"),
        ("{v for v in x}", "set comprehension"),
        ("x is 1", "'is' comparisons are only allowed with None"),
        ("x is not y", "'is' comparisons are only allowed with None"),
        ("f'{x!r}'", "f-string conversion '!r' is not allowed"),
        ("f'{x!s}'", "f-string conversion '!s' is not allowed"),
        ("f'{x:{w}}'", "format spec must be a literal"),
        ("f'{x:>99999}'", "too wide"),
        ("*a", "syntax error"),
        ("[*a]", "starred expression '*' is not allowed"),
        ("len(*a)", "starred expression '*' is not allowed"),
        ("dict(**a)", "keyword unpacking '**' is not allowed"),
        ("{**a}", "dict unpacking '**' is not allowed"),
        ("x.format('{0.__class__}')", "method 'format' is not allowed"),
        ("x.pop()", "method 'pop' is not allowed"),
        ("x[0]()", "can be called"),
        ("sorted(x, key=len)", "keyword 'key' is not allowed for sorted() (allowed: reverse)"),
        ("min(x, key=len)", "keyword 'key' is not allowed for min()"),
        ("x << 2", "operator '<<' is not allowed"),
        ("~x", "operator '~' is not allowed"),
        ("x @ y", "operator '@' is not allowed"),
        ("b'bytes'", "constant of type bytes is not allowed"),
        ("1j", "constant of type complex is not allowed"),
        ("(yield)", "yield is not allowed"),
        ("await x", "await is not allowed"),
        ("[v async for v in x]", "async comprehension is not allowed"),
        ("[1 for x.y in z]", "comprehension targets must be a name or a tuple of names"),
        ("x[1:2, 3]", "slice outside of a subscript"),
        ("1 +", "syntax error: invalid syntax (column 4)"),
        ("x = 1", "syntax error"),
        ("", "expression is empty"),
        ("lenn(x)", "did you mean 'len'?"),
    ],
)
def test_rejections(source: str, fragment: str) -> None:
    with pytest.raises(ExprError) as info:
        compile_expr(source)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
    assert "in expression " in message


def test_unregistered_function_lists_registered_ones() -> None:
    with pytest.raises(ExprError, match=r"function 'foo' is not registered \(registered: a, b\)"):
        compile_expr("foo(1)", functions={"b": len, "a": len})


def test_too_long_expression() -> None:
    source = "+".join(["1"] * 1500)  # 2999 characters
    with pytest.raises(ExprError, match=r"too long \(2999 characters, limit 2000\)") as info:
        compile_expr(source)
    assert len(str(info.value)) < 400  # the quoted expression is truncated
    assert compile_expr("1 + 1", max_length=5)({}) == 2
    with pytest.raises(ExprError, match="too long"):
        compile_expr("1 + 1", max_length=4)


def test_too_many_nodes() -> None:
    flat = "[" + ",".join(["1"] * 999) + "]"  # 1000 nodes, shallow
    with pytest.raises(ExprError, match=r"too complex \(more than 400 nodes\)"):
        compile_expr(flat)
    assert compile_expr(flat, max_nodes=1000, max_length=10_000)({}) == [1] * 999
    with pytest.raises(ExprError, match="more than 4 nodes"):
        compile_expr("a + b + c", max_nodes=4)  # two BinOps, three Names
    assert compile_expr("a + b + c", max_nodes=5)({"a": 1, "b": 2, "c": 3}) == 6


def test_deeply_nested_expression() -> None:
    chain = "x" + ".a" * 999  # 1000 nodes, each nested in the next
    with pytest.raises(ExprError, match="nested too deeply"):
        compile_expr(chain)
    unary = "-" * 999 + "1"
    with pytest.raises(ExprError, match="nested too deeply"):
        compile_expr(unary, max_nodes=5000)
    parens = "(" * 1000 + "1" + ")" * 1000
    with pytest.raises(ExprError):
        compile_expr(parens, max_length=5000)


def test_unknown_name_with_names_given() -> None:
    with pytest.raises(ExprError, match=r"unknown name 'usr' \(did you mean 'user'\?\)"):
        compile_expr("usr is not None", names=["user", "rt"])
    with pytest.raises(ExprError, match=r"unknown name 'zzz' \(known names: rt, user\)"):
        compile_expr("zzz", names=["user", "rt"])
    assert compile_expr("user", names=["user"])({"user": 1}) == 1


def test_non_string_source() -> None:
    with pytest.raises(ExprError, match="must be a string, got bool"):
        compile_expr(True)  # type: ignore[arg-type]


def test_error_types() -> None:
    assert issubclass(ExprError, ValueError)
    assert issubclass(ExprRuntimeError, RuntimeError)


# ---------------------------------------------------------------------------
# reads / calls
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "reads"),
    [
        ("user", {"user"}),
        ("rt.carts[user].items", {"rt.carts.*.items", "user"}),
        ("user is not None and len(rt.carts[user].items) < 50", {"user", "rt.carts.*.items"}),
        ("rt.carts['u1'].items[0].sku", {"rt.carts.u1.items.*.sku"}),
        ("rt.name.lower()", {"rt.name"}),
        ("rt.stock.get(params.sku, 0)", {"rt.stock", "params.sku"}),
        ("[i.qty for i in rt.carts[user].items if i.sku != params.sku]", {"rt.carts.*.items", "user", "params.sku"}),
        ("{k: v for k, v in rt.stock.items()}", {"rt.stock"}),
        ("[x for x in x.y]", {"x.y"}),
        ("rt.items[1:n]", {"rt.items.*", "n"}),
        ("f'{params.price:.2f}'", {"params.price"}),
        ("len([1, 2]) + 3", set()),
        ("rt[rt.key]", {"rt.*", "rt.key"}),
    ],
)
def test_reads(source: str, reads: set[str]) -> None:
    assert compile_expr(source).reads == frozenset(reads)


def test_calls() -> None:
    compiled = compile_expr("len(x) + f(y) + 'a'.count('a')", functions={"f": abs})
    assert compiled.calls == frozenset({"len", "f"})
    assert isinstance(compiled, Expr)
    assert compiled.source == "len(x) + f(y) + 'a'.count('a')"


# ---------------------------------------------------------------------------
# Runtime errors and resource limits
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("1/0", "ZeroDivisionError: division by zero in expression '1/0'"),
        ("1 % 0", "ZeroDivisionError"),
        ("'a' + 1", "TypeError"),
        ("[1][5]", "IndexError: list index out of range"),
        ("range(10**9)", "range() would produce more than 10000 items"),
        ("range(2**60)", "range() would produce more than 10000 items"),
        ("int('x')", "ValueError"),
        ("2 ** 65", "exponent 65 is too large"),
        ("2 ** -65", "exponent -65 is too large"),
        ("(10 ** 60) ** 60", "would exceed"),
        ("float('1e308') ** 2", "OverflowError"),
        ("'ab' * 10**6", "sequence repetition would produce more than"),
        ("10**6 * [0]", "sequence repetition would produce more than"),
        ("'%s' % 1", "'%' string formatting is not supported"),
        ("None < 1", "TypeError"),
        ("{[1]: 2}", "unhashable"),
        ("[a for a, b in [[1]]]", "expected 2 values to unpack, got 1"),
        ("[1 for a in range(10000) for b in range(100)]", "comprehension ran more than"),
        ("max([])", "ValueError"),
        ("len(5)", "TypeError"),
        ("[x for x in 5]", "TypeError"),
    ],
)
def test_runtime_errors(source: str, fragment: str) -> None:
    compiled = compile_expr(source)
    with pytest.raises(ExprRuntimeError) as info:
        compiled({})
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
    assert "in expression " in message


def test_runtime_error_chains_original_exception() -> None:
    with pytest.raises(ExprRuntimeError) as info:
        compile_expr("a // b")({"a": 1, "b": 0})
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_expression_reusable_after_error() -> None:
    compiled = compile_expr("10 // b")
    with pytest.raises(ExprRuntimeError):
        compiled({"b": 0})
    assert compiled({"b": 5}) == 2


# ---------------------------------------------------------------------------
# The module itself must never evaluate expression text with Python.
# ---------------------------------------------------------------------------


def test_module_does_not_use_eval_exec_or_compile() -> None:
    tree = ast.parse(inspect.getsource(expr_module))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in {"eval", "exec", "compile", "__import__"}, (
                f"simweb.expr calls {node.func.id}() at line {node.lineno}"
            )
