"""A pool of environment files as a Gymnasium environment (text observations and actions)."""

import gymnasium

import spadegym.adapters.gym  # noqa: F401  (registers spadegym/Level-v0)

env = gymnasium.make("spadegym/Level-v0", path="examples/pool/")
observation, info = env.reset(seed=0)
observation, reward, terminated, truncated, info = env.step(info["valid_actions"][0])
print(observation)
env.close()
