"""The verifiers plugin of spadegym (taskset id ``spadegym-verifiers``): see ``spadegym.adapters.verifiers_env``.

verifiers imports a taskset by its installed top-level package name, hence this one-line package.
"""

from spadegym.adapters.verifiers_env import SpadegymChatHarness, SpadegymEnv, SpadegymTaskset

__all__ = ["SpadegymChatHarness", "SpadegymEnv", "SpadegymTaskset"]
