"""simweb's runtime wing: an app at run time: App (spec + world + functions + tasks), the
registry, a state's recorded history.

Its floor and the imports it may make: :mod:`simweb._layout` and docs/architecture.md.
"""
