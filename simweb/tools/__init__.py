"""simweb's tools wing: commands and integrations: the CLI, check, eval, red team, walks,
train, plots, the viewer, BrowserGym, the trainers.

Its floor and the imports it may make: :mod:`simweb._layout` and docs/architecture.md.
"""
