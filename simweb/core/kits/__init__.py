"""Kits: pieces of spec every app needs once, shipped with the engine.

A spec includes a kit by name with its options::

    kits:
      auth: {heading: Sign in to Simstay, flash: "Welcome back, {account.full_name}."}

:func:`resolve_kits` runs before the spec is validated. It fills the kit's options into
its pages and events (``simweb/kits/<kit>.yaml``) and merges them into the spec; an entry
the spec writes itself under the same name extends the kit's (mappings merge key by key,
anything else replaces, ``null`` removes a key), so an app keeps the kit and changes one
message, or adds a parameter, without copying the rest. Each kit may also bring templates
(``simweb/kits/templates``), found after the app's own: an app that has a ``login.html``
uses it.

Filling in is plain data substitution, never evaluation: in the kit file a string
``${name}`` (or ``${a.b}``) stands for an option's value of any type; inside a longer string
it is replaced by the value's text; a list item ``${name}`` whose value is a list is spliced
into the list; a mapping key ``${name}`` whose value is a mapping is spliced into the
mapping (a string value renames the key); an entry with ``kit_if: name`` is kept only when
that option is truthy.
"""
from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

#: The folder of the kits' templates (the Jinja fallback after an app's own templates).
TEMPLATES = Path(__file__).with_name("templates")

_WHOLE = re.compile(r"^\$\{([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)\}$")
_PART = re.compile(r"\$\{([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)\}")
#: The sections of a spec a kit may contribute to.
SECTIONS = ("pages", "events")
_KITS: dict[str, dict] = {}


class KitError(ValueError):
    """A kit that cannot be included: unknown kit or option, a bad option value."""


def kit_names() -> list[str]:
    """The kits shipped with the engine."""
    return sorted(p.name[:-5] for p in resources.files(__name__).iterdir() if p.name.endswith(".yaml"))


def load_kit(name: str) -> dict:
    """The parsed kit file ``simweb/kits/<name>.yaml`` (cached; callers copy)."""
    kit = _KITS.get(name)
    if kit is None:
        names = kit_names()
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            raise KitError(f"unknown kit '{name}'" + (f" (did you mean '{close[0]}'?)" if close else "")
                           + f"; kits: {', '.join(names)}")
        kit = _KITS[name] = yaml.safe_load((resources.files(__name__) / f"{name}.yaml").read_text(encoding="utf-8"))
    return kit


def merge(base: Any, over: Any) -> Any:
    """``over`` laid on ``base``: mappings merge key by key (``None`` removes a key),
    anything else replaces."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return copy.deepcopy(over)
    out = copy.deepcopy(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out[key], value) if key in out else copy.deepcopy(value)
    return out


def _options(name: str, kit: dict, given: Any) -> dict:
    """The kit's options: its defaults with ``given`` laid on them (unknown names refused)."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise KitError(f"kit '{name}': the options must be a mapping, not {type(given).__name__}")
    defaults = kit.get("options") or {}
    _known(name, given, defaults, "")
    options = merge(defaults, {k: v for k, v in given.items() if v is not None})
    for key, value in list(options.items()):
        sub = kit.get(f"{key}_options")
        if sub is None or value is False:
            continue
        if value is True:
            value = {}
        if not isinstance(value, dict):
            raise KitError(f"kit '{name}': option '{key}' must be true, false or a mapping")
        _known(name, value, sub, f"{key}.")
        options[key] = merge(sub, value)
    derive = _DERIVED.get(name)
    if derive is not None:
        derive(options)
    return options


def _known(kit: str, given: dict, defaults: dict, prefix: str) -> None:
    """Refuse an option the kit does not declare, with the closest name it does."""
    for key in given:
        if key not in defaults:
            close = difflib.get_close_matches(str(key), list(defaults), n=1)
            raise KitError(f"kit '{kit}': unknown option '{prefix}{key}'"
                           + (f" (did you mean '{prefix}{close[0]}'?)" if close else ""))


def _lookup(options: dict, ref: str, kit: str) -> Any:
    value: Any = options
    for part in ref.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KitError(f"kit '{kit}': its file refers to option '{ref}', which is not set")
        value = value[part]
    return value


def _fill(node: Any, options: dict, kit: str) -> Any:
    """``node`` with every ``${option}`` filled in (see the module docstring)."""
    if isinstance(node, str):
        whole = _WHOLE.match(node)
        if whole:
            return copy.deepcopy(_lookup(options, whole.group(1), kit))
        return _PART.sub(lambda m: str(_lookup(options, m.group(1), kit)), node)
    if isinstance(node, list):
        out: list[Any] = []
        for item in node:
            filled = _fill(item, options, kit)
            if isinstance(item, str) and _WHOLE.match(item) and isinstance(filled, list):
                out.extend(filled)
            else:
                out.append(filled)
        return out
    if isinstance(node, dict):
        if "kit_if" in node and not _lookup(options, node["kit_if"], kit):
            return _DROP
        result: dict[str, Any] = {}
        for key, value in node.items():
            if key == "kit_if":
                continue
            whole = _WHOLE.match(key) if isinstance(key, str) else None
            if whole:
                named = _lookup(options, whole.group(1), kit)
                if isinstance(named, dict):
                    result.update(copy.deepcopy(named))
                    continue
                key = str(named)
            filled = _fill(value, options, kit)
            if filled is not _DROP:
                result[key] = filled
        return result
    return node


_DROP = object()


def expand_kit(name: str, given: Any) -> tuple[dict, dict]:
    """(the kit's spec sections with ``given`` options filled in, the resolved options)."""
    kit = load_kit(name)
    options = _options(name, kit, given)
    sections = {s: _fill(kit.get(s) or {}, options, name) for s in SECTIONS}
    return sections, options


def resolve_kits(doc: Any) -> tuple[Any, dict[str, dict]]:
    """(``doc`` with its ``kits`` merged in, the options of each kit by name).

    The spec's own pages and events are laid over the kits' (a spec extends or
    overrides a kit entry by writing the same name); a document without ``kits`` comes
    back as it is."""
    if not isinstance(doc, dict) or "kits" not in doc:
        return doc, {}
    kits = doc["kits"]
    if not isinstance(kits, dict):
        raise KitError("'kits' must be a mapping of kit name to its options")
    out = {k: v for k, v in doc.items() if k != "kits"}
    resolved: dict[str, dict] = {}
    for name, given in kits.items():
        sections, resolved[name] = expand_kit(str(name), given)
        for section, entries in sections.items():
            own = out.get(section) or {}
            if not isinstance(own, dict):
                continue   # the schema check reports it
            # A spec entry set to null removes the kit's entry of that name.
            merged = {k: (merge(v, own[k]) if k in own else v) for k, v in entries.items()
                      if not (k in own and own[k] is None)}
            merged.update({k: v for k, v in own.items() if k not in entries and v is not None})
            out[section] = merged
    return out, resolved


def _derive_auth(options: dict) -> None:
    """The auth kit's register form: each field once, as a form parameter and an input."""
    register = options.get("register")
    if not register:
        return
    fields = register.get("fields") or []
    if not isinstance(fields, list) or not all(isinstance(f, dict) and "name" in f and "param" in f for f in fields):
        raise KitError("kit 'auth': option 'register.fields' must be a list of {name, bid, label, input, param}")
    register["params"] = {f["name"]: f["param"] for f in fields}
    register["row"] = {**register.get("row", {}), "password": "params.password"}
    register["fields"] = [{"name": f["name"], "bid": f.get("bid", f"reg-{f['name']}"),
                           "label": f.get("label", f["param"].get("label", f["name"])),
                           "input": f.get("input", "text"), "max_length": f["param"].get("max_length")}
                          for f in fields]


#: Options a kit computes from the ones given (one function per kit that needs it).
_DERIVED: dict[str, Callable[[dict], None]] = {"auth": _derive_auth}

__all__ = ["KitError", "TEMPLATES", "expand_kit", "kit_names", "load_kit", "merge", "resolve_kits"]
