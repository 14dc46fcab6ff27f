"""What an app folder declares (``apps/<app>/__init__.py``): :class:`AppDefinition` and
:class:`AppLimits`, with lazy ``module:attribute`` references, so that listing apps, the
registry and an app's own package import nothing heavy (no spec, world or templates;
:mod:`simweb.runtime.app` builds the app at run time from it).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import resources
from typing import Any


def _import(ref: str) -> Any:
    """Resolve a lazy entry point 'package.module:attribute'."""
    mod, _, attr = ref.partition(":")
    obj = importlib.import_module(mod)
    return getattr(obj, attr) if attr else obj


@dataclass(frozen=True)
class AppLimits:
    """What an app promises about its tasks, checked by ``simweb.check_app``."""

    min_templates: int = 15
    #: easy, medium and hard templates must all exist
    every_difficulty: bool = True
    #: the share of templates that must be medium or hard by fact count
    min_hard_share: float = 0.0
    #: the random agent's success rate may not exceed this
    max_random_success: float = 0.05
    random_steps: int = 30


@dataclass(frozen=True)
class AppDefinition:
    """What an app folder declares (apps/<app>/__init__.py). References are lazy
    'module:attribute' strings so that listing apps imports nothing heavy."""

    name: str
    title: str
    package: str                 # e.g. "simweb.apps.shopping" (its templates/ folder is used)
    world: str                   # class with .load(seed, size, progress=...) -> world
    functions: str               # FunctionTable
    tasks: str                   # list of TaskTemplate
    verifiers: str               # module with the app's verifier functions
    default_size: int
    description: str = ""
    #: where the spec lives, 'package:file.yaml'; default: simweb.specs:<name>.yaml
    spec: str = ""
    limits: AppLimits = AppLimits()

    def spec_path(self) -> str:
        """The file path of the app's spec."""
        package, _, file = (self.spec or f"simweb.specs:{self.name}.yaml").partition(":")
        return str(resources.files(package) / file)


__all__ = ["AppDefinition", "AppLimits"]
