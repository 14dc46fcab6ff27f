"""simweb's serving wing: served mode: the Flask server and its sessions, the omnibox server,
Chromium's env.

Its floor and the imports it may make: :mod:`simweb._layout` and docs/architecture.md.
"""
