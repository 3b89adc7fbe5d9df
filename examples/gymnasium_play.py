"""A pool of environment files as a Gymnasium environment (text observations and actions)."""

import gymnasium

# "module:id": Gymnasium imports spadegym.adapters.gym, which registers spadegym/Level-v0, before making it.
env = gymnasium.make("spadegym.adapters.gym:spadegym/Level-v0", path="examples/pool/", rewards="return")
observation, info = env.reset(seed=0)
observation, reward, terminated, truncated, info = env.step(info["valid_actions"][0])
print(observation)
env.close()
