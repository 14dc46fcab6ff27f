"""simweb's core wing: the spec (data model and compiler), its control machine and updates,
expressions, functions, the state document, the world contract and world databases, limits,
URLs.

Its floor and the imports it may make: :mod:`simweb._layout` and docs/architecture.md.
"""
