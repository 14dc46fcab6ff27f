"""The app kit: apps are discovered from their folders (or a plugin's entry point), and a
built wheel ships every app's code, templates, spec and verifiers."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import simweb
from simweb.runtime import registry

ROOT = Path(__file__).resolve().parents[1]


def test_every_app_folder_is_registered():
    folders = sorted(p.name for p in (ROOT / "apps").iterdir() if (p / "__init__.py").is_file())
    assert registry.builtin_apps() == {name: f"simweb.apps.{name}:APP" for name in folders}
    assert set(folders) <= set(simweb.app_names())
    for name in folders:
        assert registry.definition(name).name == name


def test_plugin_apps_come_from_the_entry_point_group(tmp_path, monkeypatch):
    dist = tmp_path / "notes_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: notes-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\nnotes = notes_plugin:APP\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registry.plugin_apps() == {"notes": "notes_plugin:APP"}


def test_a_plugin_may_not_take_a_builtin_name():
    with pytest.raises(registry.RegistryError, match="already registered"):
        registry.register("shopping", "elsewhere:APP")


@pytest.mark.slow
def test_the_wheel_ships_every_app(tmp_path):
    # Built from a copy: an in-tree build would leave build/ and egg-info in the checkout.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                                              ".hypothesis", ".pytest_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path), str(src)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("simweb-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for app in registry.builtin_apps():
        for path in (f"simweb/apps/{app}/__init__.py", f"simweb/apps/{app}/tasks.py", f"simweb/specs/{app}.yaml",
                     f"simweb/verifiers/{app}.py", f"simweb/apps/{app}/templates/base.html"):
            assert path in names, path
    for module in sorted((ROOT / "apps").rglob("*.py")):   # every module, in subpackages too (shopping/world/)
        assert "simweb/apps/" + module.relative_to(ROOT / "apps").as_posix() in names, module
    for path in ("simweb/core/kits/__init__.py", "simweb/core/kits/auth.py", "simweb/core/kits/auth.yaml",
                 "simweb/core/kits/templates/login.html", "simweb/core/kits/templates/register.html",
                 "simweb/core/kits/templates/pager.html"):
        assert path in names, path   # the engine's kits, which every app's sign-in comes from
    assert not any(n.startswith("apps/") for n in names), "a bare top-level 'apps' package"
