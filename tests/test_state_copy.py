"""The state copy (simweb.state.deep_copy) against its reference, an orjson round trip.

Forks and resets copy states with the compiled copy (simweb/_jsoncopy.pyx) when it is
built: new dicts and lists, shared leaves. It must give exactly the round trip's value,
types included (1, 1.0 and True are equal in Python, not in JSON), and leave to the round
trip whatever the round trip would change or refuse."""
from __future__ import annotations

import os
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core import state as st_mod
from simweb.core.state import deep_copy, round_trip_copy


class _Str(str):
    pass


class _Int(int):
    pass


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types at every level (what JSON can tell apart)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(type(k) is str and _same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)


def _containers(x: Any, out: list[int]) -> list[int]:
    if isinstance(x, (dict, list, tuple)):
        out.append(id(x))
        for v in (x.values() if isinstance(x, dict) else x):
            _containers(v, out)
    return out


def _outcome(fn: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(value)
    except Exception as e:   # the type of the refusal is part of the contract
        return "raises", type(e)


leaves = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-2**70, max_value=2**70), st.sampled_from([2**64 - 1, 2**64, -2**63, -2**63 - 1]),
    st.text(), st.text(alphabet=st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010)),
    st.sampled_from([_Str("sub"), _Int(4), "é→😀", "\ud800", ""]))
keys = st.one_of(st.text(max_size=6), st.sampled_from([_Str("k"), "\udfff", 1, None, (1,)]))
values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(keys, inner, max_size=5),
                            st.tuples(inner, inner)),
    max_leaves=40)


@settings(max_examples=600, deadline=None)
@given(values)
def test_the_copy_is_the_round_trip_or_raises_as_it_does(value: Any) -> None:
    got, ref = _outcome(deep_copy, value), _outcome(round_trip_copy, value)
    assert got[0] == ref[0]
    if got[0] == "raises":
        assert got[1] is ref[1]
    else:
        assert _same(got[1], ref[1])
        assert orjson.dumps(got[1]) == orjson.dumps(ref[1])
        # a copy: no dict or list of the value is shared with it
        assert not set(_containers(got[1], [])) & set(_containers(value, []))


def test_nesting_past_the_compiled_limit_is_left_to_the_round_trip() -> None:
    for depth in (150, 201, 260):
        v: Any = "leaf"
        for i in range(depth):
            v = [v] if i % 2 else {"k": v}
        got, ref = _outcome(deep_copy, v), _outcome(round_trip_copy, v)
        assert got[0] == ref[0] and (got[1] is ref[1] if got[0] == "raises" else _same(got[1], ref[1]))
    cyc: list = []
    cyc.append(cyc)
    assert _outcome(deep_copy, cyc) == _outcome(round_trip_copy, cyc) == ("raises", orjson.JSONEncodeError)


def test_a_forked_state_is_independent_of_its_parent() -> None:
    import simweb

    env = simweb.make("booking", seed=0)
    env.reset(seed=3, options={"task": sorted(env.app.tasks)[0]})
    child = env.fork()
    assert child.state == env.state and child.state is not env.state
    child.state["browser"]["tabs"][0]["history"].append("/elsewhere")
    child.state["runtime"]["counters"]["x"] = 1
    assert "/elsewhere" not in env.state["browser"]["tabs"][0]["history"]
    assert "x" not in env.state["runtime"]["counters"]


def test_the_copy_in_use_is_the_one_this_install_should_run() -> None:
    """CI sets SIMWEB_REQUIRE_COMPILED=1: there the extension must be built and used."""
    try:
        import simweb._jsoncopy  # noqa: F401
        built = True
    except ImportError:
        built = False
    if os.environ.get("SIMWEB_REQUIRE_COMPILED") == "1":
        assert built and st_mod.COMPILED_COPY
    assert st_mod.COMPILED_COPY == built


def test_the_compiled_copy_declines_what_the_round_trip_would_change() -> None:
    declined = [(1, 2), {"a": float("nan")}, float("inf"), "a\ud800", 2**64, -2**63 - 1, {1: 2}, _Str("s"),
                {"k": [_Int(1)]}, {_Str("k"): 1}, {"x": {1, 2}}]
    copied = [{"a": [1, 2.5, None, True, "x→y😀"]}, 2**64 - 1, -2**63, [], {}, "", 0.0, -0.0]
    if st_mod.COMPILED_COPY:
        from simweb._jsoncopy import copy

        assert all(copy(v) is NotImplemented for v in declined)
        assert all(_same(copy(v), round_trip_copy(v)) for v in copied)
    for v in declined + copied:   # whichever copy ran, deep_copy is the round trip's
        assert _outcome(deep_copy, v)[0] == _outcome(round_trip_copy, v)[0]
