"""A deliberately tiny app that exercises the engine's access and clock concepts
(roles, permissions, workflows, timers) without any real app's weight."""
from simweb.runtime.app import AppDefinition

APP = AppDefinition(
    name="tiny",
    title="Tiny board",
    package="tinyapp",
    world="tinyapp.world:TinyWorld",
    functions="tinyapp.functions:FUNCTIONS",
    tasks="tinyapp.functions:TASKS",
    verifiers="tinyapp.functions",
    default_size=3,
    spec="tinyapp:tiny.yaml",
)
