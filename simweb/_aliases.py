"""Old module paths as aliases of the moved modules: one meta-path finder over
:data:`simweb._layout.MOVED`.

``import simweb.env`` imports ``simweb.episodes.env`` and binds the very same module object
under the old name too (``sys.modules["simweb.env"] is sys.modules["simweb.episodes.env"]``),
so ``from simweb.env import SimEnv``, ``from simweb import spec``, ``monkeypatch.setattr(
"simweb.env.X", ...)``, gymnasium's ``simweb.env:SimEnv`` entry point, pickles naming an old
path and ``python -m simweb.cli`` all keep working. A package maps its submodules with it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import CodeType, ModuleType

from ._layout import MOVED

_ROOT = "simweb"
_TABLE = {f"{_ROOT}.{old}": f"{_ROOT}.{new}" for old, new in MOVED.items()}


def target(name: str) -> str | None:
    """The real path of old module path ``name`` (``simweb.omnibox.start`` ->
    ``simweb.serving.omnibox.start``), or None if ``name`` was not moved."""
    head = name
    while head:
        new = _TABLE.get(head)
        if new is not None:
            return new + name[len(head):]
        head = head.rpartition(".")[0]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Loads an old path as the module already imported (or now imported) at its new path."""

    def __init__(self, real: str) -> None:
        self.real = real
        self.real_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.real)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # module_from_spec stamped the alias spec on the real module: give it back its own
        # (the real spec is what reload, pickle and -m read).
        module.__spec__ = self.real_spec

    def get_code(self, fullname: str) -> CodeType | None:
        """For ``python -m <old path>`` (runpy reads the code through the loader)."""
        spec = importlib.util.find_spec(self.real)
        loader = spec.loader if spec is not None else None
        get_code = getattr(loader, "get_code", None)
        return get_code(self.real) if get_code is not None else None


class _AliasSpec(importlib.machinery.ModuleSpec):
    """An old path's spec whose package is the real module's: ``python -m simweb.cli`` runs
    the code with ``__package__`` from the spec, and its relative imports (``..core``)
    resolve from the module's real place."""

    def __init__(self, name: str, loader: _AliasLoader, origin: str | None, real_parent: str) -> None:
        super().__init__(name, loader, origin=origin)
        self.real_parent = real_parent

    @property
    def parent(self) -> str:
        return self.real_parent


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds old paths (and only them) and hands them to :class:`_AliasLoader`."""

    def find_spec(self, fullname: str, path: object = None, target_module: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_ROOT + "."):
            return None
        real = target(fullname)
        if real is None:
            return None
        found = importlib.util.find_spec(real)
        if found is None:
            return None
        # origin: runpy takes sys.argv[0] and __file__ from it (python -m simweb.cli)
        return _AliasSpec(fullname, _AliasLoader(real), found.origin, found.parent or "")


_FINDER = _AliasFinder()


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): an old path must never be found
    as a file of its own (``simweb/kits`` is gone, but a stale build could leave one)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
