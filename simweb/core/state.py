"""The state document: one JSON object with four layers.

    world    a reference to read-only world data (app, seed, size, content hash);
             the data itself lives in SQLite and is never copied into a state
    runtime  the backend state as an overlay on the world (app-declared schema)
    browser  tabs (URL, history, page UI state), cookies, signed-in user, chat
    meta     app, spec version/hash, world hash, simulated clock, step, RNG, task, and the
             history of requests since the start (simweb.history)

A state's identity is the sha256 of its canonical JSON (sorted keys, compact).
"""
from __future__ import annotations

import hashlib
import importlib
import math
from typing import Any

import jsonschema
import orjson

from .limits import LimitError, Limits, check_shape

#: 2: ``meta.history`` (simweb.history), the requests a state's runtime is replayed from.
STATE_FORMAT = 2

#: The deepest nesting any state may have (real ones are about 8 levels deep).
MAX_STATE_DEPTH = 64
_ENGINE_LIMITS = Limits(max_items=2**62, max_depth=MAX_STATE_DEPTH)

#: The JSON Schema of ``meta.history`` (simweb.history records it).
HISTORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["origin", "log", "digest"],
    "additionalProperties": False,
    "properties": {
        "origin": {"enum": ["start", "blank"]},
        "log": {"type": "array", "items": {"type": "string"}},
        "digest": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    },
}


#: The JSON Schema of ``browser.confirm``: a form submission a site variant holds until
#: its confirmation page's Confirm (simweb.runtime.variant_confirm); absent when none is.
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["token", "url", "form", "back", "source", "user"],
    "additionalProperties": False,
    "properties": {
        "token": {"type": "integer", "minimum": 0},
        "url": {"type": "string"},
        "form": {"type": "object", "additionalProperties": {"type": ["string", "array"], "items": {"type": "string"}}},
        "back": {"type": "string"},
        "source": {"type": "string"},
        "user": {"type": ["integer", "null"]},
    },
}


#: The JSON Schema of ``browser.steps``: the first page of a multi-step form a site variant
#: holds until its second page is sent (simweb.runtime.variant_steps); absent when none is.
#: The same shape as a pending confirmation: the event's URL, the first page's fields as
#: read, the page and its address, the token and the user who sent it.
STEPS_SCHEMA: dict[str, Any] = CONFIRM_SCHEMA


#: The JSON Schema of the core layers. The runtime layer's schema comes from the app's spec.
CORE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "simweb state",
    "type": "object",
    "required": ["world", "runtime", "browser", "meta"],
    "additionalProperties": False,
    "properties": {
        "world": {
            "type": "object",
            "required": ["app", "seed", "size", "hash"],
            "additionalProperties": False,
            "properties": {
                "app": {"type": "string"},
                "seed": {"type": "integer", "minimum": 0},
                "size": {"type": "integer", "minimum": 1},
                "hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            },
        },
        "runtime": {"type": "object"},
        "browser": {
            "type": "object",
            "required": ["tabs", "active", "cookies", "local_storage", "user", "pending_flash", "chat"],
            "additionalProperties": False,
            "properties": {
                "tabs": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/tab"}},
                "active": {"type": "integer", "minimum": 0},
                "cookies": {"type": "object", "additionalProperties": {"type": "string"}},
                "local_storage": {"type": "object", "additionalProperties": {"type": "string"}},
                "user": {"type": ["integer", "null"]},
                "pending_flash": {"$ref": "#/$defs/flash"},
                "confirm": CONFIRM_SCHEMA,
                "steps": STEPS_SCHEMA,
                "chat": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["role", "message"],
                        "properties": {"role": {"enum": ["user", "assistant", "infeasible"]},
                                       "message": {"type": "string"}},
                    },
                },
            },
        },
        "meta": {
            "type": "object",
            "required": ["format", "app", "spec_version", "spec_hash", "world_hash", "clock", "step",
                         "requests", "rng", "task", "history"],
            "additionalProperties": False,
            "properties": {
                "format": {"const": STATE_FORMAT},
                "app": {"type": "string"},
                "spec_version": {"type": "integer"},
                "spec_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "world_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "clock": {"type": "integer", "minimum": 0},
                "step": {"type": "integer", "minimum": 0},
                "requests": {"type": "integer", "minimum": 0},
                "rng": {
                    "type": "object",
                    "required": ["seed", "counter"],
                    "additionalProperties": False,
                    "properties": {"seed": {"type": "integer"}, "counter": {"type": "integer", "minimum": 0}},
                },
                "task": {
                    "type": ["object", "null"],
                    "required": ["id", "params"],
                    "properties": {"id": {"type": "string"}, "params": {"type": "object"}},
                },
                "history": HISTORY_SCHEMA,
                # simweb.variants: the site variant (absent: variant 0, today's site)
                "variant": {"type": "integer", "minimum": 1},
            },
        },
    },
    "$defs": {
        "flash": {
            "type": ["object", "null"],
            "required": ["level", "message"],
            "additionalProperties": False,
            "properties": {"level": {"enum": ["info", "success", "error"]}, "message": {"type": "string"},
                           # simweb.runtime.variant_flows: a refusal about one form field (the
                           # field, the URL its form posted to), on a variant that shows it there
                           "field": {"type": "string"}, "form": {"type": "string"}},
        },
        "tab": {
            "type": "object",
            "required": ["url", "page", "status", "history", "cursor", "fields", "focus", "scroll", "flash"],
            "additionalProperties": False,
            "properties": {
                "url": {"type": "string"},
                "page": {"type": "string"},
                "status": {"type": "integer"},
                "history": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "cursor": {"type": "integer", "minimum": 0},
                "fields": {"type": "object", "additionalProperties": {"type": ["string", "boolean"]}},
                "focus": {"type": ["string", "null"]},
                "scroll": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
                "flash": {"$ref": "#/$defs/flash"},
                # form state per history entry (str(index) -> fields), as Chromium keeps it
                "saved_fields": {"type": "object", "additionalProperties": {"type": "object"}},
                # the caret of a text control left off its value's end: [bid, start, end]
                "caret": {"type": "array", "minItems": 3, "maxItems": 3},
                # a date field's parts (month, day, year; null: cleared) while they make no value
                "parts": {"type": "object", "additionalProperties": {
                    "type": "array", "minItems": 3, "maxItems": 3, "items": {"type": ["integer", "null"]}}},
            },
        },
    },
}


class StateError(ValueError):
    """A state document that cannot be used here (schema, foreign world or spec)."""


def canonical(obj: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, compact, UTF-8. Non-string keys are an error."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except TypeError as exc:  # non-str keys, tuples of bad types, sets...
        raise StateError(f"state is not canonical JSON: {exc}") from None


def state_hash(state: dict) -> str:
    """sha256 of the canonical JSON of ``state``: the state's identity."""
    return hashlib.sha256(canonical(state)).hexdigest()


def _load_compiled_copy() -> Any:
    """simweb._jsoncopy.copy if the extension is built (setup.py; a machine without a C
    compiler installs without it), else None."""
    try:
        module = importlib.import_module("simweb._jsoncopy")
    except ImportError:
        return None
    return module.copy


_compiled_copy = _load_compiled_copy()
#: Whether :func:`deep_copy` copies in C (simweb/_jsoncopy.pyx) rather than by round trip.
COMPILED_COPY: bool = _compiled_copy is not None


def round_trip_copy(obj: Any) -> Any:
    """A deep copy through an orjson round trip: the reference :func:`deep_copy` keeps to
    (tuples become lists, a NaN becomes None, what JSON cannot hold raises)."""
    return orjson.loads(orjson.dumps(obj))


def deep_copy(obj: Any) -> Any:
    """A deep copy of JSON data, equal to :func:`round_trip_copy`'s (and raising as it
    does). States are copied on every fork and reset: the compiled copy makes new dicts
    and lists and shares the immutable leaves, about twice as fast as the round trip; it
    leaves whatever the round trip would change (a tuple, a NaN, a str subclass) to it."""
    if _compiled_copy is not None:
        out = _compiled_copy(obj)
        if out is not NotImplemented:
            return out
    return round_trip_copy(obj)


def new_tab(url: str = "about:blank", page: str = "blank") -> dict:
    """A fresh browser tab at ``url``."""
    return {"url": url, "page": page, "status": 200, "history": [url], "cursor": 0, "fields": {},
            "focus": None, "scroll": [0, 0], "flash": None}


def new_browser() -> dict:
    return {"tabs": [new_tab()], "active": 0, "cookies": {}, "local_storage": {}, "user": None,
            "pending_flash": None, "chat": []}


def find_non_finite(obj: Any, path: str = "$") -> str | None:
    """Path of the first NaN/Infinity float inside ``obj`` (JSON has none), else None."""
    if isinstance(obj, float):
        return None if math.isfinite(obj) else path
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str):
                return f"{path}.{k!r} (non-string key)"
            bad = find_non_finite(v, f"{path}.{k}")
            if bad:
                return bad
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            bad = find_non_finite(v, f"{path}[{i}]")
            if bad:
                return bad
    elif isinstance(obj, tuple):
        return f"{path} (tuple)"
    return None


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a JSON value, equal exactly when JSON Schema calls two
    values equal (1 == 1.0, but true is not 1; objects compare by members)."""
    t = type(value)
    if t is dict:
        return ("o", frozenset((k, _frozen(v)) for k, v in value.items()))
    if t is list:
        return ("a", tuple(_frozen(v) for v in value))
    if t is bool:
        return ("b", value)
    return value


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Any:
    """``uniqueItems`` in one pass with a hash set (jsonschema's own check compares every
    pair of unhashable items: quadratic in the list's length)."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for i, item in enumerate(instance):
        key = _frozen(item)
        if key in seen:
            yield jsonschema.ValidationError(f"has non-unique elements (item {i} repeats an earlier one)")
            return
        seen.add(key)


#: Draft 2020-12 with a linear ``uniqueItems``; every other keyword is the library's.
_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"uniqueItems": _unique_items})

#: At most this many violations are collected (a state with a million bad items is
#: refused as fast as one with a few).
MAX_REPORTED_ERRORS = 100


class StateValidator:
    """Validates whole states: the core schema plus one app's runtime schema."""

    def __init__(self, runtime_schema: dict[str, Any]):
        schema = dict(CORE_SCHEMA)
        schema["properties"] = dict(CORE_SCHEMA["properties"], runtime=runtime_schema)
        jsonschema.Draft202012Validator.check_schema(schema)
        self._validator = _Validator(schema)
        self._valid: set[bytes] = set()

    def errors(self, state: Any) -> list[str]:
        """Schema violations as 'at <json path>: <message>', sorted; [] when valid (at
        most ``MAX_REPORTED_ERRORS`` + 1 of them: enough to tell there are more)."""
        out = []
        for n, err in enumerate(self._validator.iter_errors(state)):
            if n > MAX_REPORTED_ERRORS:
                break
            where = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
            out.append(f"at {where}: {err.message}")
        if not out:
            bad = find_non_finite(state)
            if bad:
                out.append(f"at {bad}: not representable in JSON")
        return sorted(out)

    def check(self, state: Any) -> None:
        """Raise StateError for the first violation. States already found valid (by
        content hash) are not validated again: restoring the same snapshot into many
        forks costs a hash, not a schema walk. Nesting deeper than
        ``MAX_STATE_DEPTH`` is refused first, in one iterative pass (the schema walk and
        the JSON encoder recurse)."""
        try:
            check_shape(state, _ENGINE_LIMITS)
        except LimitError as exc:
            raise StateError(f"invalid state: {exc}") from None
        try:
            digest = hashlib.sha256(canonical(state)).digest()
        except StateError:
            digest = None
        if digest is not None and digest in self._valid:
            return
        errs = self.errors(state)
        if errs:
            more = (f" (and {len(errs) - 1}{'+' if len(errs) > MAX_REPORTED_ERRORS else ''} more)"
                    if len(errs) > 1 else "")
            raise StateError(f"invalid state {errs[0]}{more}")
        if digest is not None:
            if len(self._valid) >= 4096:
                self._valid.clear()
            self._valid.add(digest)
