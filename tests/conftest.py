"""Shared fixtures: every test family runs over every registered app."""
from __future__ import annotations

import pytest

import simweb

APPS = simweb.app_names()


@pytest.fixture(scope="session", params=APPS)
def app_name(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def env_of():
    """One env per app for the whole session (worlds are shared anyway)."""
    envs: dict[str, object] = {}

    def get(name: str):
        if name not in envs:
            envs[name] = simweb.make(name, seed=0)
        return envs[name]

    return get


