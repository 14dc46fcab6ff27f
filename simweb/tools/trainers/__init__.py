"""simweb in the LLM trainers' contracts (docs/training.md, "Trainers").

- :mod:`simweb.trainers.openenv_env`: an OpenEnv environment served by openenv's own
  server (``simweb openenv APP``), its typed models and its ``EnvClient`` (extra ``openenv``);
- :mod:`simweb.trainers.trl_env`: environments for TRL's ``GRPOTrainer(environment_factory=...)``,
  in-process and through a ``simweb openenv`` server (extra ``trl``);
- :mod:`simweb.trainers.skyrl_env`: a skyrl-gym ``BaseTextEnv`` registered as ``simweb``
  (extra ``skyrl``).

Each speaks simweb through :mod:`simweb.textenv` (prompt text, the one reply parser, group
starts from forks). The trainers' packages are imported only by the module that needs them.
"""
