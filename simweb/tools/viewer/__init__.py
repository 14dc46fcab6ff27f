"""``simweb view``: a local web viewer of trajectories, fork trees, state diffs and
sim-vs-live runs (:mod:`simweb.viewer.app`), over an index that reads large runs lazily
(:mod:`simweb.viewer.index`)."""
from __future__ import annotations

from typing import Any

from .index import RunIndex, ViewerError

__all__ = ["RunIndex", "ViewerError", "create_app"]


def create_app(paths: list[str], **kwargs: Any) -> Any:
    """The viewer's Flask app over ``paths`` (see :func:`simweb.viewer.app.create_app`)."""
    from .app import create_app as make

    return make(paths, **kwargs)
