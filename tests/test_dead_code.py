"""No dead functions: every module-level function of the engine, the apps and the
verifiers is referenced somewhere in the tree.

A function counts as referenced when its own module names it, a module imports it by name
from its module (old flat paths resolved through ``simweb._layout.MOVED``), any module reads
an attribute of that name, or its name is a word of a string constant or of a spec,
template or config file (the spec calls functions by name, ``module:attribute`` strings
name entry points). A decorated function is registered by its decorator (a route, a
command, a spec function) and is not asked about. Methods are left out: a method is often
reached by a name built at run time (``_do_<action>``) or called by a library it overrides.
"""
from __future__ import annotations

import ast
import collections
import re
from pathlib import Path

from simweb._layout import MOVED

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("simweb", "apps", "verifiers")
#: Folders holding other programs' files, and build output.
NOT_SOURCE = {"files", "build", "__pycache__", ".git"}
TEXT_FILES = {".yaml", ".yml", ".html", ".toml", ".pyx", ".js", ".cfg", ".j2"}
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _skipped(path: Path) -> bool:
    return any(part in NOT_SOURCE for part in path.relative_to(ROOT).parts)


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] in ("apps", "verifiers"):
        parts.insert(0, "simweb")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _home(module: str) -> str:
    """The module an import names, at its new home (old flat paths through MOVED)."""
    if not module.startswith("simweb."):
        return module
    rest = module[len("simweb."):]
    for old in sorted(MOVED, key=len, reverse=True):
        if rest == old or rest.startswith(old + "."):
            return "simweb." + MOVED[old] + rest[len(old):]
    return module


def _imported_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return _home(node.module or "")
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return _home(".".join(base + ([node.module] if node.module else [])))


def unreferenced() -> list[str]:
    """``path:line: name`` of every module-level function nothing references."""
    attributes: collections.Counter[str] = collections.Counter()
    words: collections.Counter[str] = collections.Counter()
    names: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    imported: dict[str, set[str]] = collections.defaultdict(set)
    trees: dict[Path, ast.Module] = {}
    for path in sorted(ROOT.rglob("*.py")):
        if _skipped(path):
            continue
        module, tree = _module(path), ast.parse(path.read_text(encoding="utf-8"))
        trees[path] = tree
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names[module][node.id] += 1
            elif isinstance(node, ast.Attribute):
                attributes[node.attr] += 1
            elif isinstance(node, ast.ImportFrom):
                source = _imported_from(node, module, path.name == "__init__.py")
                imported[source].update(alias.name for alias in node.names)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                words.update(WORD.findall(node.value))
    for path in ROOT.rglob("*"):
        if path.suffix in TEXT_FILES and path.is_file() and not _skipped(path):
            words.update(WORD.findall(path.read_text(encoding="utf-8", errors="ignore")))
    found = []
    for path, tree in trees.items():
        if path.relative_to(ROOT).parts[0] not in SOURCES:
            continue
        module = _module(path)
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list:
                continue
            name = node.name
            if name.startswith("__") or names[module][name] or name in imported[module] or attributes[name] \
                    or words[name]:
                continue
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    return found


def test_every_module_level_function_is_referenced():
    dead = unreferenced()
    assert not dead, "functions nothing references (remove them, or use them):\n" + "\n".join(dead)
