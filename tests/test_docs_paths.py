"""The module paths the docs name exist under the engine's layout (docs/architecture.md).

README.md and every page under docs/ are read for ``simweb/...py`` file paths, quoted
``simweb/.../`` folders and dotted ``simweb.x.y`` names. A path must be a file (a folder)
of the repository; a dotted name must be a module of its new home (an old flat path such
as ``simweb.env`` still imports through the aliases, but a reader looking for
``simweb/env.py`` finds nothing, so the docs name ``simweb.episodes.env``), optionally
followed by attributes that module has (``simweb.serving.server.create_app``). One failure
lists every reference that does not resolve, with its file and line.
"""
from __future__ import annotations

import ast
import importlib
import re
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
#: ``simweb/...py`` (a file path) and ``simweb.a.b`` (a dotted name; a trailing dot or a
#: file suffix such as ``.yaml`` or ``.db`` ends it).
FILE_REF = re.compile(r"(?<![\w/.-])simweb/[\w/]+\.pyx?\b")
#: A folder of the package: ``simweb/<dir>/`` with its closing slash, in backquotes.
DIR_REF = re.compile(r"(?<=`)simweb/(?:[\w]+/)+(?=`)")
DOTTED_REF = re.compile(r"(?<![\w/.-])simweb(?:\.[A-Za-z_]\w*)+")
#: Dotted names that are not Python paths: file names and hosts that start with "simweb.".
NOT_PYTHON = {"simweb.db", "simweb.example", "simweb.yaml", "simweb.json", "simweb.log", "simweb.sqlite"}
#: BrowserGym's task ids (``simweb.<app>.<task>``, docs/browsergym.md) are not module paths.
BROWSERGYM_ID = re.compile(r"simweb\.(?:shopping|forum|issues|cms|booking)\.\w+")
#: The packages setup.py installs under simweb from folders beside it.
INSTALLED = {"apps": "apps", "specs": "specs", "verifiers": "verifiers"}


def _module_file(parts: list[str]) -> Path | None:
    """The file of module ``simweb.<parts>`` in its real home (apps and verifiers are
    installed as ``simweb.apps.<app>`` and ``simweb.verifiers.<app>``), None if none."""
    if parts[:1] and parts[0] in INSTALLED:
        base, rest = ROOT / INSTALLED[parts[0]], parts[1:]
    else:
        base, rest = ROOT / "simweb", parts
    path = base.joinpath(*rest)
    for candidate in (path.with_suffix(".py"), path.with_suffix(".pyx"), path / "__init__.py"):
        if rest and candidate.is_file():
            return candidate
    if not rest and (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def dotted_resolves(name: str) -> bool:
    """``name`` is a module at its new home, then attributes of that module."""
    parts = name.split(".")[1:]
    for cut in range(len(parts), -1, -1):
        if _module_file(parts[:cut]) is None:
            continue
        module_file = _module_file(parts[:cut])
        assert module_file is not None
        try:
            obj: Any = importlib.import_module(".".join(["simweb", *parts[:cut]]))
        except ImportError:   # an optional dependency is missing: read the module's own names
            return not parts[cut:] or parts[cut] in _top_level_names(module_file)
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            # A module reached as an attribute is an old path's alias (simweb.env, once
            # imported, is an attribute of simweb): a real one was found by its file above.
            if obj is None or isinstance(obj, types.ModuleType):
                return False
        return True
    return False


def _top_level_names(path: Path) -> set[str]:
    """The names a module's file defines or imports at its top level."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def references() -> list[tuple[str, int, str]]:
    """(doc, line, reference) for every module reference in the docs."""
    found = []
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for ref in FILE_REF.findall(line) + DIR_REF.findall(line) + DOTTED_REF.findall(line):
                found.append((str(doc.relative_to(ROOT)), n, ref))
    return found


def resolves(ref: str) -> bool:
    if ref.endswith("/"):
        return (ROOT / ref).is_dir()
    if "/" in ref:
        return (ROOT / ref).is_file()
    return ref in NOT_PYTHON or BROWSERGYM_ID.fullmatch(ref) is not None or dotted_resolves(ref)


def test_the_docs_name_module_paths():
    assert len(references()) > 50   # the extraction reads the docs at all


def test_every_module_path_in_the_docs_exists():
    stale = [f"{doc}:{line}: {ref}" for doc, line, ref in references() if not resolves(ref)]
    assert not stale, "the docs name paths that do not exist:\n" + "\n".join(stale)


@pytest.mark.parametrize("ref,ok", [
    ("simweb/serving/server.py", True), ("simweb/server.py", False),
    ("simweb.serving.server.create_app", True), ("simweb.server", False), ("simweb.env", False),
    ("simweb.episodes.env.SimEnv", True), ("simweb.episodes.env.NoSuchThing", False),
    ("simweb.apps.shopping", True), ("simweb.verifiers.forum", True), ("simweb.make", True),
    ("simweb.specs", True), ("simweb.shopping.product_price", True),
    ("simweb/serving/site/", True), ("simweb/kits/", False)])
def test_the_check_tells_a_stale_path_from_a_real_one(ref, ok):
    assert resolves(ref) is ok


def test_the_architecture_picture_draws_the_wings_of_the_layout():
    """docs/architecture.md's picture lists simweb._layout.WINGS, top floor first, each with
    its floor number, so the picture and the enforced layout cannot drift apart."""
    from simweb._layout import WINGS

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn = re.findall(r"^[ |v]+(\d+) (\w+) ", text, re.M)
    wings = [name for name, _ in WINGS]
    assert [name for _, name in drawn] == wings[::-1]
    assert [int(n) for n, _ in drawn] == list(range(len(wings), 0, -1))
