"""Package discovery for the wheel: the engine, every app folder under apps/ (installed as
simweb.apps.<app>), the specs and the verifiers. Adding an app needs no edit here.

Also two optional compiled modules, built with Cython when a C compiler is there (without
one the install still succeeds and the Python versions run): the AX-tree walk
(simweb/_axwalk.pyx, see simweb/web/axtree.py) and the state copy (simweb/_jsoncopy.pyx, see
simweb/core/state.py). They stay beside the package root (simweb._layout.FLAT names their wings)."""
from setuptools import Extension, find_packages, setup

DIRS = {"simweb": "simweb", "simweb.apps": "apps", "simweb.specs": "specs", "simweb.verifiers": "verifiers"}
packages = [pkg + (f".{sub}" if sub else "") for pkg, folder in DIRS.items()
            for sub in ["", *find_packages(folder)]]


def _extensions() -> list:
    try:
        from Cython.Build import cythonize
    except ImportError:  # no Cython (a build without build isolation): Python walk only
        return []
    walk = Extension("simweb._axwalk", ["simweb/_axwalk.pyx"], optional=True,
                     extra_compile_args=["-O2"], libraries=["dl"])
    copy = Extension("simweb._jsoncopy", ["simweb/_jsoncopy.pyx"], optional=True, extra_compile_args=["-O2"])
    return cythonize([walk, copy], compiler_directives={"language_level": "3"}, quiet=True)


setup(
    package_dir=DIRS,
    packages=packages,
    package_data={"": ["templates/*.html", "static/*", "*.yaml", "schemas/*.json", "files/*", "files/**/*"]},
    ext_modules=_extensions(),
)
