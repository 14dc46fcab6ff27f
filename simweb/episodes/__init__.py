"""simweb's episodes wing: episodes and envs: the episode, SimEnv, the text env, policies,
rollouts, groups, trajectories, the learned policy, replay verification.

Its floor and the imports it may make: :mod:`simweb._layout` and docs/architecture.md.
"""
