"""The JSON Schema every app spec (specs/<app>.yaml) must satisfy."""
from __future__ import annotations

from typing import Any

_EXPR = {"type": "string", "minLength": 1}
_IDENT = "^[a-z_][a-z0-9_]*$"
#: what a side-effect row echoes: a table, or a table's field (``issues.state``)
_ECHO = "^[a-z_][a-z0-9_]*(\\.[a-z_][a-z0-9_]*(\\|[a-z_][a-z0-9_]*)*(=[a-z0-9_]+)?)?$"

_PARAM = {
    "type": "object",
    "additionalProperties": False,
    "required": ["type"],
    "properties": {
        "type": {"enum": ["int", "float", "str", "bool", "enum", "money", "list"]},
        "label": {"type": "string"},
        "required": {"type": "boolean"},
        "default": {},
        "min": {"type": "number"},
        "max": {"type": "number"},
        "min_length": {"type": "integer", "minimum": 0},
        "max_length": {"type": "integer", "minimum": 1},
        "pattern": {"type": "string"},
        "pattern_error": {"type": "string"},
        "values": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "strip": {"type": "boolean"},
        "secret": {"type": "boolean"},
    },
}

_COMMON_OP = {"for": {"type": "string", "pattern": r"^\s*[a-z_][a-z0-9_]*\s+in\s+.+$"}, "when": _EXPR}

_OPS: list[dict[str, Any]] = [
    {"properties": {"op": {"const": "set"}, "path": _EXPR, "value": {}}, "required": ["path", "value"]},
    {"properties": {"op": {"const": "inc"}, "path": _EXPR, "by": {}}, "required": ["path"]},
    {"properties": {"op": {"const": "append"}, "path": _EXPR, "value": {}}, "required": ["path", "value"]},
    {"properties": {"op": {"const": "remove"}, "path": _EXPR, "where": _EXPR}, "required": ["path", "where"]},
    {"properties": {"op": {"const": "merge"}, "path": _EXPR, "value": {}}, "required": ["path", "value"]},
    {"properties": {"op": {"const": "delete"}, "path": _EXPR}, "required": ["path"]},
    {"properties": {"op": {"const": "insert"}, "table": {"type": "string", "pattern": _IDENT}, "id": {},
                    "value": {}, "as": {"type": "string", "pattern": _IDENT}},
     "required": ["table", "value"]},
    {"properties": {"op": {"const": "update"}, "table": {"type": "string", "pattern": _IDENT}, "id": {},
                    "fields": {"type": "object", "minProperties": 1}},
     "required": ["table", "id", "fields"]},
    {"properties": {"op": {"const": "tombstone"}, "table": {"type": "string", "pattern": _IDENT}, "id": {}},
     "required": ["table", "id"]},
    {"properties": {"op": {"const": "schedule"}, "timer": {"type": "string", "pattern": _IDENT}, "at": _EXPR,
                    "args": {"type": "object", "propertyNames": {"pattern": _IDENT}}, "key": _EXPR},
     "required": ["timer", "at"]},
    {"properties": {"op": {"const": "cancel"}, "key": _EXPR, "timer": {"type": "string", "pattern": _IDENT}},
     "required": ["key"]},
    {"properties": {"op": {"const": "token"}, "path": _EXPR, "length": {"type": "integer", "minimum": 4, "maximum": 64},
                    "alphabet": {"type": "string", "minLength": 2, "maxLength": 64}},
     "required": ["path"]},
]

_UPDATE = {
    "type": "object",
    "required": ["op"],
    "properties": {"op": {"enum": ["set", "inc", "append", "remove", "merge", "delete", "insert", "update",
                                   "tombstone", "token", "schedule", "cancel"]}},
    "allOf": [
        {"if": {"properties": {"op": {"const": o["properties"]["op"]["const"]}}},
         "then": {"properties": {**o["properties"], **_COMMON_OP}, "required": o["required"],
                  "additionalProperties": False}}
        for o in _OPS
    ],
}

# A guard or requirement: a condition of its own, or a named permission (with the
# expressions its arguments take).
_CHECK = {
    "type": "object",
    "additionalProperties": False,
    "oneOf": [{"required": ["if"], "not": {"required": ["permission"]}},
              {"required": ["permission"], "not": {"required": ["if"]}}],
    "properties": {
        "if": _EXPR,
        "permission": {"type": "string", "pattern": _IDENT},
        "args": {"type": "object", "propertyNames": {"pattern": _IDENT}, "additionalProperties": _EXPR},
        "error": {"type": "string"},
        "status": {"type": "integer", "minimum": 300, "maximum": 599},
        "redirect": _EXPR,
        # the form field the refusal is about (one of the event's params): a variant may
        # show its message beside that field (simweb.runtime.variant_flows)
        "field": {"type": "string", "pattern": _IDENT},
    },
}

_ARGS = {"type": "array", "items": {"type": "string", "pattern": _IDENT}, "uniqueItems": True}

_PERMISSION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["if"],
    "properties": {
        "description": {"type": "string"},
        "args": _ARGS,
        "if": _EXPR,
        "error": {"type": "string"},
        "status": {"type": "integer", "minimum": 300, "maximum": 599},
    },
}

_WORKFLOW = {
    "type": "object",
    "additionalProperties": False,
    "required": ["table", "field", "initial", "transitions"],
    "properties": {
        "description": {"type": "string"},
        "table": {"type": "string", "pattern": _IDENT},
        "field": {"type": "string", "pattern": _IDENT},
        "initial": {"type": "string", "minLength": 1},
        "transitions": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["from", "to"],
                "properties": {"from": {"type": "string", "minLength": 1}, "to": {"type": "string", "minLength": 1},
                               "name": {"type": "string", "pattern": _IDENT}},
            },
        },
    },
}

_TIMER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["updates"],
    "properties": {
        "description": {"type": "string"},
        "args": _ARGS,
        "if": _EXPR,
        "updates": {"type": "array", "minItems": 1, "items": _UPDATE},
    },
}

_VARS = {"type": "object", "propertyNames": {"pattern": _IDENT}, "additionalProperties": _EXPR}

#: What the site maintains as a consequence of other changes (see simweb.effects.Bookkeeping).
_FILL = {"oneOf": [{"const": "site"},
                   {"type": "object", "additionalProperties": False, "required": ["value"], "properties": {"value": {}}},
                   {"type": "object", "additionalProperties": False, "required": ["user"],
                    "properties": {"user": {"type": "string", "pattern": _IDENT}}}]}

_BOOKKEEPING = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "paths": {"type": "array", "items": {"type": "string", "pattern": r"^[a-z_*][a-z0-9_*]*(\.[a-z0-9_*]+)*$"}},
        "fields": {"type": "object", "propertyNames": {"pattern": _IDENT},
                   "additionalProperties": {"type": "array", "items": {"type": "string", "pattern": _IDENT}}},
        "judged_row_fields": {"type": "object", "propertyNames": {"pattern": _IDENT},
                              "additionalProperties": {"oneOf": [
                                  {"type": "array", "items": {"type": "string", "pattern": _IDENT}},
                                  {"type": "object", "propertyNames": {"pattern": _IDENT},
                                   "additionalProperties": {"type": "string", "pattern": "^([a-z_][a-z0-9_]*)?$"}}]}},
        # what the site fills in by itself on a row a task creates (simweb.effects.Fill)
        "defaults": {"type": "object", "propertyNames": {"pattern": _IDENT},
                     "additionalProperties": {"type": "object", "propertyNames": {"pattern": _IDENT},
                                              "additionalProperties": _FILL}},
        "value_defaults": {"type": "object",
                           "propertyNames": {"pattern": r"^[a-z_*][a-z0-9_*]*(\.[a-z0-9_*]+)*$"},
                           "additionalProperties": _FILL},
        "new_rows": {"type": "object", "propertyNames": {"pattern": _IDENT},
                     "additionalProperties": {"oneOf": [
                         {"type": ["object", "null"]},
                         {"type": "array", "minItems": 1, "items": {
                             "type": "object", "additionalProperties": False,
                             "properties": {
                                 "where": {"type": "object"},
                                 "echo_of": {"type": "object", "propertyNames": {"pattern": _IDENT},
                                             "additionalProperties": {"type": "string", "pattern": _ECHO}},
                                 "same_as": {"type": "object", "propertyNames": {"pattern": _IDENT},
                                             "additionalProperties": {"type": "array", "minItems": 1,
                                                                      "items": {"type": "string", "pattern": _IDENT}}},
                                 "echo_value": {"type": "string",
                                                "pattern": r"^[a-z_{][a-z0-9_{}]*(\.[a-z0-9_{}]+)*$"},
                                 # echo_of field -> {row field: the part of the judged field's
                                 # net change (start to final) the row must record}
                                 # with echo_value: the part of that value's net change the row records
                                 "value_net": {"enum": ["added", "removed"]},
                                 "net": {"type": "object", "propertyNames": {"pattern": _IDENT},
                                         "additionalProperties": {
                                             "type": "object", "minProperties": 1,
                                             "propertyNames": {"pattern": _IDENT},
                                             "additionalProperties": {"enum": ["added", "removed"]}}}}}}]}},
        "references": {"type": "object", "propertyNames": {"pattern": _IDENT},
                       "additionalProperties": {"type": "object", "propertyNames": {"pattern": _IDENT},
                                                "additionalProperties": {"type": "string", "pattern": _IDENT}}},
    },
}

SPEC_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "simweb app spec",
    "type": "object",
    "additionalProperties": False,
    "required": ["app", "version", "title", "start_url", "clock", "runtime", "pages", "events"],
    "properties": {
        "app": {"type": "string", "pattern": _IDENT},
        "version": {"type": "integer", "minimum": 1},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "start_url": {"type": "string", "pattern": "^/"},
        "clock": {
            "type": "object",
            "additionalProperties": False,
            "required": ["start_day", "start_second", "seconds_per_request"],
            "properties": {
                "start_day": {"type": "integer", "minimum": 0},
                "start_second": {"type": "integer", "minimum": 0, "maximum": 86399},
                "seconds_per_request": {"type": "integer", "minimum": 0},
            },
        },
        "runtime": {
            "type": "object",
            "additionalProperties": False,
            "required": ["initial", "schema"],
            "properties": {"initial": {"type": "object"}, "schema": {"type": "object"}},
        },
        "globals": _VARS,
        "roles": {"type": "array", "items": {"type": "string", "pattern": _IDENT}, "minItems": 1, "uniqueItems": True},
        "permissions": {"type": "object", "propertyNames": {"pattern": _IDENT}, "additionalProperties": _PERMISSION},
        "workflows": {"type": "object", "propertyNames": {"pattern": _IDENT}, "additionalProperties": _WORKFLOW},
        "timers": {"type": "object", "propertyNames": {"pattern": _IDENT}, "additionalProperties": _TIMER},
        "bookkeeping": _BOOKKEEPING,
        "pages": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": _IDENT},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["route", "template"],
                "properties": {
                    "route": {"type": "string", "pattern": "^/"},
                    "template": {"type": "string", "pattern": r"^[A-Za-z0-9_\-/]+\.html$"},
                    "title": {"type": "string"},
                    "query": {"type": "object", "propertyNames": {"pattern": _IDENT}, "additionalProperties": _PARAM},
                    "load": _VARS,
                    "require": {"type": "array", "items": _CHECK},
                    "on_view": {"type": "array", "items": _UPDATE},
                    "substates": _VARS,
                },
            },
        },
        "events": {
            "type": "object",
            "propertyNames": {"pattern": _IDENT},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["route", "from"],
                "properties": {
                    "route": {"type": "string", "pattern": "^/"},
                    "description": {"type": "string"},
                    "from": {"oneOf": [{"const": "*"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]},
                    "to": {"type": "string"},
                    "params": {"type": "object", "propertyNames": {"pattern": _IDENT}, "additionalProperties": _PARAM},
                    "let": _VARS,
                    "guards": {"type": "array", "items": _CHECK},
                    "updates": {"type": "array", "items": _UPDATE},
                    "redirect": _EXPR,
                    "flash": {"type": "string"},
                    "effect": {"enum": ["none", "reversible", "irreversible"]},
                },
            },
        },
    },
}
