"""Spec loading: validation errors name file, event/page and field; unsafe expressions
are rejected at load time; read/write sets and side-effect classes are derived."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

import simweb
from simweb.apps.shopping.functions import FUNCTIONS
from simweb.core.spec import SpecError, compile_spec, load_spec, split_message

SPEC_PATH = Path(__file__).resolve().parents[1] / "specs" / "shopping.yaml"
FNS = FUNCTIONS.merged_with_builtins()
READS = {n: f.reads for n, f in FNS.items()}


@pytest.fixture(scope="module")
def doc() -> dict:
    return yaml.safe_load(SPEC_PATH.read_text())


def compile_doc(d: dict):
    return compile_spec(d, "specs/test.yaml", FUNCTIONS.callables(), READS)


def test_shipped_spec_loads_and_derives_effects():
    spec = load_spec(SPEC_PATH, FUNCTIONS.callables(), function_reads=READS)
    ev = spec.events
    assert ev["sign_out"].effect == "none"                  # writes only the browser layer
    assert ev["sign_in"].effect == "irreversible"           # and the site's sign-in log, which stays
    assert ev["add_to_cart"].effect == "reversible"         # remove_from_cart writes the same list back
    assert ev["place_order"].derived_effect == "irreversible"  # creates orders nothing can delete
    assert ev["delete_address"].derived_effect == "irreversible"  # tombstones an entity
    assert "runtime.entities.orders.*" in ev["place_order"].writes
    assert "runtime.carts.*.items" in ev["add_to_cart"].writes
    assert any(r.startswith("runtime.carts") for r in ev["add_to_cart"].reads)
    assert "world.products" in ev["add_to_cart"].reads     # through product()'s declared reads


def test_unknown_field_names_event_and_suggests(doc):
    d = copy.deepcopy(doc)
    d["events"]["add_to_cart"]["gaurds"] = d["events"]["add_to_cart"].pop("guards")
    with pytest.raises(SpecError) as e:
        compile_doc(d)
    msg = str(e.value)
    assert msg.startswith("specs/test.yaml: event 'add_to_cart': field 'gaurds'")
    assert "did you mean 'guards'" in msg


def test_missing_required_field_names_event(doc):
    d = copy.deepcopy(doc)
    del d["events"]["place_order"]["route"]
    with pytest.raises(SpecError, match=r"event 'place_order'.*'route' is a required property"):
        compile_doc(d)


def test_bad_op_is_rejected_with_its_position(doc):
    d = copy.deepcopy(doc)
    d["events"]["remove_coupon"]["updates"][0]["op"] = "explode"
    with pytest.raises(SpecError, match=r"event 'remove_coupon': field 'updates\[0\]\.op'"):
        compile_doc(d)


@pytest.mark.parametrize("expr,needle", [
    ("p.__class__", "private name"),
    ("().__class__.__bases__", "private"),
    ("__import__('os')", "__import__"),
    ("open('/etc/passwd')", "not registered"),
    ("(lambda: 1)()", "lambda"),
    ("produkt(params.product_id)", "produkt"),
])
def test_unsafe_or_unknown_expressions_are_rejected(doc, expr, needle):
    d = copy.deepcopy(doc)
    d["events"]["add_to_cart"]["guards"][0]["if"] = expr
    with pytest.raises(SpecError) as e:
        compile_doc(d)
    msg = str(e.value)
    assert "event 'add_to_cart': field 'guards[0].if'" in msg
    assert needle in msg


def test_oversized_expression_is_rejected(doc):
    d = copy.deepcopy(doc)
    d["pages"]["home"]["load"]["shelf"] = " + ".join(["1"] * 2000)
    with pytest.raises(SpecError, match=r"page 'home': field 'load.shelf'"):
        compile_doc(d)


def test_unknown_source_page_suggests(doc):
    d = copy.deepcopy(doc)
    d["events"]["place_order"]["from"] = ["checkout_reveiw"]
    with pytest.raises(SpecError, match=r"unknown page 'checkout_reveiw' \(did you mean 'checkout_review'\?\)"):
        compile_doc(d)


def test_paths_must_be_writable_roots(doc):
    d = copy.deepcopy(doc)
    d["events"]["remove_coupon"]["updates"][0]["path"] = "meta.clock"
    with pytest.raises(SpecError, match=r"must start with one of \['browser', 'rt'\]"):
        compile_doc(d)


def test_declared_effect_cannot_weaken_derived(doc):
    d = copy.deepcopy(doc)
    d["events"]["place_order"]["effect"] = "none"
    with pytest.raises(SpecError, match=r"declared 'none' but its updates make it 'irreversible'"):
        compile_doc(d)


def test_runtime_initial_must_match_runtime_schema(doc):
    d = copy.deepcopy(doc)
    d["runtime"]["initial"]["carts"] = []
    with pytest.raises(SpecError, match=r"field 'runtime.initial'"):
        compile_doc(d)


def test_invalid_yaml_names_the_line(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("app: x\nevents: {a: [1, 2}\n")
    with pytest.raises(SpecError, match=r"broken.yaml: not valid YAML at line 2"):
        load_spec(p, {})


def test_message_splitting():
    assert split_message("Only {p.stock} left") == [("text", "Only "), ("expr", "p.stock"), ("text", " left")]
    assert split_message("a {{literal}} b") == [("text", "a {literal} b")]
    assert split_message("{ {'k': 1}['k'] }") == [("expr", "{'k': 1}['k']")]
    with pytest.raises(ValueError, match="unclosed"):
        split_message("oops {x")
    with pytest.raises(ValueError, match="unmatched"):
        split_message("oops }")


def test_every_update_operation_has_one_implementation():
    """The spec schema's operations, the compiled types (one per operation) and the
    engine's dispatch table name the same ops."""
    from simweb.core.spec_schema import _OPS
    from simweb.core.updates import OPERATIONS

    assert {o["properties"]["op"]["const"] for o in _OPS} == {t.op for t in OPERATIONS}
    assert len({t.op for t in OPERATIONS}) == len(OPERATIONS)


def test_each_update_compiles_to_its_own_type():
    from simweb.core import spec as S
    app = simweb.make("issues", seed=0).unwrapped.app
    kinds = {type(u) for ev in app.spec.events.values() for u in ev.updates}
    assert {S.InsertOp, S.UpdateRowOp, S.SetOp, S.ScheduleOp} <= kinds
    for ev in app.spec.events.values():
        for u in ev.updates:
            if isinstance(u, S.RowUpdate):
                assert u.writes == f"runtime.entities.{u.table}.*"
            elif isinstance(u, (S.ScheduleOp, S.CancelOp)):
                assert u.writes == "runtime.timers"
            else:
                assert isinstance(u, S.PathUpdate) and u.writes == u.path.static
