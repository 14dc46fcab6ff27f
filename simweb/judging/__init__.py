"""simweb's judging wing: tasks and intended effects: verdict building blocks, the task model,
templates, effects, decomposition.

Its floor and the imports it may make: :mod:`simweb._layout` and docs/architecture.md.
"""
