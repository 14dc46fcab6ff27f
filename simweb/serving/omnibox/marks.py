"""Set-of-marks screenshots: number the visible interactive regions of a page.

:func:`set_of_marks` sorts regions exactly as WebGym's browser server does, because a
client acts on the numbers it sees:

* ``<option>`` regions and file inputs always count as visible (they are not drawn);
* a region whose rect is empty, or covers more than 90% of the screenshot, is skipped;
  otherwise its rect's centre puts it in exactly one of: above the viewport (centre above
  the top), below it (centre at or past the bottom), or visible; a centre left or right
  of the image puts it nowhere;
* visible regions get display ids ``"1"``, ``"2"``... in region order, and
  ``id_mapping`` maps each display id to its page id; regions above and below keep their
  page ids and map to themselves, added after the display ids (so a page id equal to a
  display id overrides that display id's entry, as on the real server).

The drawing is this module's own: a coloured frame per visible region and its number in
a label at the frame's top-right corner (below the frame when the frame touches the top
of the viewport). Chromium draws it: :func:`overlay` lists the marks, the page script
lays them over the page in a closed shadow root for the screenshot and removes them, so
the PNG is never decoded and encoded again in Python.
"""
from __future__ import annotations

import colorsys
from collections.abc import Mapping
from typing import Any

#: Labels are not drawn above a frame whose top is this close to the top of the image.
TOP_LABEL_MARGIN = 20
#: Regions larger than this fraction of the image are page-sized containers, not targets.
MAX_AREA_FRACTION = 0.9

_ALWAYS_VISIBLE = ("option", "input, type=file")


def _color(display_id: str) -> tuple[int, int, int]:
    """A saturated colour that differs between neighbouring ids (golden-ratio hue walk)."""
    hue = (int(display_id) * 0.618033988749895) % 1.0
    r, g, b = colorsys.hsv_to_rgb(hue, 0.85, 0.95)
    return int(r * 255), int(g * 255), int(b * 255)


def _usable(rect: Mapping[str, Any] | None, limit: float) -> bool:
    if not rect:
        return False
    area = rect["width"] * rect["height"]
    return area != 0 and area <= limit


def _centre(rect: Mapping[str, Any]) -> tuple[float, float]:
    return (rect["right"] + rect["left"]) / 2.0, (rect["top"] + rect["bottom"]) / 2.0


def _sort(regions: Mapping[str, Mapping[str, Any]], size: tuple[int, int]
          ) -> tuple[list[str], list[str], list[str]]:
    """Page ids of the visible regions, those above and those below the viewport."""
    width, height = size
    limit = width * height * MAX_AREA_FRACTION
    visible: list[str] = []
    above: list[str] = []
    below: list[str] = []
    for eid, region in regions.items():
        if region.get("tag_name") in _ALWAYS_VISIBLE:
            if eid not in visible:
                visible.append(eid)
            continue
        placed = False
        for rect in region["rects"]:
            if placed or not _usable(rect, limit):
                continue
            x, y = _centre(rect)
            if not 0 <= x < width:
                continue
            if y < 0 and eid not in above:
                above.append(eid)
                placed = True
            elif y >= height and eid not in below:
                below.append(eid)
                placed = True
            elif 0 <= y < height and eid not in visible:
                visible.append(eid)
                placed = True
    return visible, above, below


def classify(regions: Mapping[str, Mapping[str, Any]], size: tuple[int, int]
             ) -> tuple[list[str], list[str], list[str], dict[str, str]]:
    """``(visible display ids, ids above, ids below, id_mapping)`` for a viewport of ``size``."""
    visible, above, below = _sort(regions, size)
    mapping: dict[str, str] = {}
    for n, eid in enumerate(visible, start=1):
        mapping[str(n)] = eid
    for eid in above + below:
        mapping[eid] = eid
    return [str(n) for n in range(1, len(visible) + 1)], above, below, mapping


def overlay(regions: Mapping[str, Mapping[str, Any]], size: tuple[int, int]) -> list[dict[str, Any]]:
    """The marks to draw on a viewport of ``size``: one per visible, non-option region
    whose rect's centre is in the viewport, as ``{"label", "rect", "color", "ink",
    "below"}`` (``below``: the label goes under the frame, which touches the top)."""
    width, height = size
    limit = width * height * MAX_AREA_FRACTION
    visible, _, _ = _sort(regions, size)
    marks: list[dict[str, Any]] = []
    for n, eid in enumerate(visible, start=1):
        region = regions[eid]
        if region.get("tag_name") == "option":
            continue
        for rect in region["rects"]:
            if not _usable(rect, limit):
                continue
            x, y = _centre(rect)
            if 0 <= x < width and 0 <= y < height:
                r, g, b = _color(str(n))
                marks.append({"label": str(n), "rect": {k: rect[k] for k in ("left", "top", "right", "bottom")},
                              "color": f"#{r:02x}{g:02x}{b:02x}",
                              "ink": "#000000" if (0.3 * r + 0.59 * g + 0.11 * b) > 90 else "#ffffff",
                              "below": rect["top"] <= TOP_LABEL_MARGIN})
    return marks
