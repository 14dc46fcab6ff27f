"""The engine's import direction (docs/architecture.md, simweb/_layout.py), enforced.

Every module under simweb/, apps/ and verifiers/ is parsed and every import it makes is
read, lazy ones inside functions, ``importlib.import_module("...")`` literals and old
flat paths (resolved through ``simweb._layout.MOVED``) too. The build fails, with one line
naming the module and the fix, when a module imports a wing above its own, when modules
import each other in a cycle, when a wing above the apps reads an app's internals, or when
a module is in no wing. And the old paths are the very modules of the new ones.
"""
from __future__ import annotations

import ast
import importlib
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import simweb
from simweb import _aliases, _layout

ROOT = Path(__file__).resolve().parents[1]
#: Folders that hold other programs' files (the counterparts' Django projects run in the
#: counterpart's own interpreter), not simweb modules.
NOT_MODULES = ("files",)
#: The package root and its private machinery: the facade on top of every wing.
FACADE = {"simweb", "simweb._aliases", "simweb._layout"}
#: What any floor may read from the facade: a constant set before it imports anything.
FACADE_CONSTANTS = {"__version__"}
WING_NAMES = [name for name, _ in _layout.WINGS]


@dataclass(frozen=True)
class Import:
    source: str       # importing module
    target: str       # imported module (new path)
    line: int
    names: tuple[str, ...]   # the names a from-import takes from target
    typing_only: bool        # under `if TYPE_CHECKING:` (never runs)


def _modules() -> dict[str, Path]:
    """Every module by dotted name, apps and verifiers as installed (simweb.apps.<app>)."""
    found: dict[str, Path] = {}
    for folder, package in (("simweb", "simweb"), ("apps", "simweb.apps"), ("verifiers", "simweb.verifiers")):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder)
            if "__pycache__" in rel.parts or any(part in NOT_MODULES for part in rel.parts[:-1]):
                continue
            parts = [package, *rel.with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _known(name: str) -> str | None:
    """The module ``name`` is or lies in (old paths mapped to new), or None if not simweb's."""
    name = _aliases.target(name) or name
    while name and name not in MODULES:
        if name.rpartition(".")[2] in _layout.FLAT and name.startswith("simweb."):
            return name
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(module: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(), str(path))
    typing_lines = _type_checking_lines(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[Import] = []

    def add(target: str | None, node: ast.AST, names: tuple[str, ...] = ()) -> None:
        known = _known(target) if target else None
        if known is not None and known != module:
            line = getattr(node, "lineno", 0)
            out.append(Import(module, known, line, names, line in typing_lines))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:   # `from pkg import submodule` imports the submodule
                sub = _known(f"{source}.{alias.name}")
                if sub is not None and sub != _known(source) and sub in MODULES:
                    add(sub, node)
                else:
                    add(source, node, (alias.name,))
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module")
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            add(node.args[0].value, node)
    return out


IMPORTS = [imp for module, path in MODULES.items() for imp in _imports(module, path)]


def wing_of(module: str) -> str | None:
    """The wing ``module`` belongs to ('facade' for the package root), None if in none."""
    if module in FACADE:
        return "facade"
    parts = module.split(".")
    if parts[1] in ("apps", "verifiers"):
        return "apps"
    if parts[1] in WING_NAMES and len(parts) > 2:
        return parts[1]
    if parts[1] in WING_NAMES:          # a wing package's own __init__
        return parts[1]
    return _layout.FLAT.get(parts[1])


def _floor(wing: str) -> int:
    return len(WING_NAMES) if wing == "facade" else _layout.floor(wing)


def test_every_module_is_in_a_wing():
    stale = [f"simweb/_layout.py: MOVED maps simweb.{old} to simweb.{new}, which does not exist"
             for old, new in _layout.MOVED.items() if f"simweb.{new}" not in MODULES]
    stale += [f"simweb/_layout.py: FLAT names simweb.{name}, which is not a module beside simweb/__init__.py"
              for name in _layout.FLAT if not list((ROOT / "simweb").glob(f"{name}.*"))]
    homeless = [f"{MODULES[m].relative_to(ROOT)} is in no wing: move it into simweb/<wing>/ (git mv), "
                f"or add '\"{m.rpartition('.')[2]}\": \"<wing>\",' to FLAT in simweb/_layout.py"
                for m in MODULES if wing_of(m) is None]
    assert not stale + homeless, "\n".join(stale + homeless)


def _upward(imp: Import) -> str | None:
    """Why ``imp`` breaks the floors, or None."""
    src, dst = wing_of(imp.source), wing_of(imp.target)
    if src is None or dst is None:
        return None   # reported by test_every_module_is_in_a_wing
    path = MODULES[imp.source]
    where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{imp.line}"
    if dst == "facade":
        if imp.target == "simweb" and imp.names and set(imp.names) <= FACADE_CONSTANTS:
            return None
        if src == "facade":
            return None
        return (f"{where}: {imp.source} imports the package root {imp.target} (the facade on top): import the "
                f"module it re-exports instead (simweb.make is simweb.episodes.env.SimEnv or "
                f"simweb.serving.browser.make_browser_env)")
    if dst == "apps" and src != "apps":
        parts = imp.target.split(".")
        if _floor(src) < _floor("apps"):
            return (f"{where}: {imp.source} ({src}) imports the app {imp.target}: the engine reads apps only "
                    f"by name, through simweb.runtime.registry")
        if len(parts) > 3:
            return (f"{where}: {imp.source} ({src}) imports {imp.target}, an app's internals: import what it "
                    f"needs from the app's package (simweb.apps.{parts[2]}) and export it there")
        return None
    if _floor(dst) > _floor(src):
        return (f"{where}: {imp.source} ({src}) imports {imp.target} ({dst}), a wing above its own: move the "
                f"shared piece down to {src} or lower, or move {imp.source} up (simweb/_layout.py)")
    return None


def test_no_module_imports_a_wing_above_its_own():
    broken = [why for imp in IMPORTS if (why := _upward(imp)) is not None]
    assert not broken, "\n".join(broken)


def _cycles() -> list[list[str]]:
    """Strongly connected groups of modules over the imports that run (Tarjan)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in IMPORTS:
        # One exception: a submodule reading a name back from its own package's __init__
        # (`from . import INSTANCES` in a counterpart's families.py). A package and the
        # submodules its __init__ re-exports are one unit; that loop never crosses a module
        # boundary a reader has to follow.
        if imp.typing_only or imp.target not in graph or imp.source.startswith(imp.target + "."):
            continue
        graph[imp.source].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_no_import_cycles():
    lines = []
    for group in _cycles():
        members = set(group)
        edges = sorted(f"{imp.source} -> {imp.target} (line {imp.line})" for imp in IMPORTS
                       if imp.source in members and imp.target in members and not imp.typing_only)
        lines.append(f"cycle {' <-> '.join(group)}: {'; '.join(edges)}: move the shared piece to a module "
                     f"both can import")
    assert not lines, "\n".join(lines)


def test_the_checker_sees_lazy_importlib_and_old_path_imports(tmp_path):
    """The checker itself: an upward lazy import, an import_module literal and an old path
    are all read (and resolved to the module they load)."""
    src = tmp_path / "probe.py"
    src.write_text("import importlib\n\ndef f():\n    from simweb.env import SimEnv\n"
                   "    importlib.import_module('simweb.counterparts')\n    from simweb import spec\n")
    found = {(imp.target, imp.line) for imp in _imports("simweb.core.probe", src)}
    MODULES["simweb.core.probe"] = src   # so _upward can name its file

    assert ("simweb.episodes.env", 4) in found
    assert ("simweb.live.counterparts", 5) in found
    assert ("simweb.core.spec", 6) in found
    ups = [_upward(Import("simweb.core.probe", target, line, (), False)) for target, line in sorted(found)]
    del MODULES["simweb.core.probe"]
    assert sum(why is not None for why in ups) == 2   # env and counterparts are above core; spec is not


@pytest.mark.parametrize("old", sorted(_layout.MOVED))
def test_old_paths_are_the_moved_modules(old):
    try:
        new = importlib.import_module(f"simweb.{_layout.MOVED[old]}")
    except ImportError as exc:   # an integration whose extra is not installed (browsergym)
        if os.environ.get("SIMWEB_REQUIRE_BROWSERGYM"):   # CI's browsergym venv: it must import there
            raise
        pytest.skip(f"simweb.{_layout.MOVED[old]}: {exc}")
    assert importlib.import_module(f"simweb.{old}") is new
    assert new.__spec__ is not None and new.__spec__.name == f"simweb.{_layout.MOVED[old]}"   # not the alias's


def test_old_from_imports_and_submodules_of_moved_packages():
    from simweb.core import spec
    from simweb.core.kits import auth
    from simweb.episodes.env import SimEnv

    assert spec is importlib.import_module("simweb.core.spec")
    assert SimEnv is importlib.import_module("simweb.episodes.env").SimEnv
    assert auth is importlib.import_module("simweb.core.kits.auth")
    assert importlib.import_module("simweb.omnibox.start") is importlib.import_module("simweb.serving.omnibox.start")
    assert simweb.env is importlib.import_module("simweb.episodes.env")


def test_monkeypatching_an_old_path_patches_the_module(monkeypatch):
    monkeypatch.setattr("simweb.env._START_CACHE_SIZE", 1)
    assert importlib.import_module("simweb.episodes.env")._START_CACHE_SIZE == 1


def test_envs_pickle_and_old_entry_points_load():
    env = simweb.make("forum", seed=0)
    env.reset(seed=1)
    again = pickle.loads(pickle.dumps(env))
    assert type(again) is type(env)
    import gymnasium

    assert gymnasium.spec("simweb/forum-v0").entry_point == "simweb.env:SimEnv"
    assert type(gymnasium.make("simweb/forum-v0").unwrapped) is type(env)


def test_python_dash_m_runs_the_cli_at_its_old_path():
    out = subprocess.run([sys.executable, "-m", "simweb.cli", "--help"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout
    # an error path runs the CLI's lazy relative imports (..core.spec) as __main__
    bad = subprocess.run([sys.executable, "-m", "simweb.cli", "run", "nosuchapp", "--task", "nosuchapp/x"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert "nosuchapp" in bad.stderr
