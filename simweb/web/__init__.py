"""simweb's web wing: what an agent sees and does: action strings, the AX tree, spaces, the
in-process browser.

Its floor and the imports it may make: :mod:`simweb._layout` and docs/architecture.md.
"""
