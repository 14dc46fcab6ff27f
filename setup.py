"""Package discovery for the wheel: the engine, every app folder under apps/ (installed as
simweb.apps.<app>), the specs and the verifiers. Adding an app needs no edit here."""
from setuptools import find_packages, setup

DIRS = {"simweb": "simweb", "simweb.apps": "apps", "simweb.specs": "specs", "simweb.verifiers": "verifiers"}
packages = [pkg + (f".{sub}" if sub else "") for pkg, folder in DIRS.items()
            for sub in ["", *find_packages(folder)]]

setup(
    package_dir=DIRS,
    packages=packages,
    package_data={"": ["templates/*.html", "static/*", "*.yaml", "schemas/*.json", "files/*", "files/**/*"]},
)
