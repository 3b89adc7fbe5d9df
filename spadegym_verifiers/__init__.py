"""The verifiers plugin of spadegym (id ``spadegym-verifiers``): see ``spadegym.adapters.verifiers_env``.

verifiers imports an environment by its installed top-level package name, hence this small package:

- the v1 API (verifiers 0.3 and 0.4): the taskset, env and harness below, found by their id
  (``vf-eval spadegym-verifiers --env.taskset.levels pool/`` on 0.4, ``eval ...`` on 0.3), and
  ``verifiers.v1.load_environment(env_config(levels="pool/"))`` from Python;
- the classic API (verifiers 0.3 only): ``load_environment(**args)``, which its
  ``verifiers.load_environment("spadegym-verifiers", levels=...)`` and its classic ``vf-eval`` call.
"""

from typing import Any

from spadegym.adapters.verifiers_env import SpadegymChatHarness, SpadegymEnv, SpadegymTaskset, env_config

__all__ = ["SpadegymChatHarness", "SpadegymEnv", "SpadegymTaskset", "env_config", "load_environment"]


def load_environment(levels: str = "", tasks: int = 64, seed: int = 0, hinted: bool = False, max_turns: int = 25,
                     **kwargs: Any) -> Any:
    """The classic API's environment (verifiers 0.3): ``levels`` is an environment file, a pool folder or a
    run directory; ``tasks`` level instances, drawn with ``seed``; ``hinted`` plays the hint arm."""
    try:
        from spadegym.adapters.verifiers_legacy import SpadegymMultiTurnEnv
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("verifiers"):
            raise
        import verifiers

        raise RuntimeError(
            f"verifiers {verifiers.__version__} has no classic API (load_environment by name); use its v1 entry "
            "points: vf-eval spadegym-verifiers --env.taskset.levels DIR, or verifiers.v1.load_environment with "
            "spadegym_verifiers.env_config(levels=DIR).") from None
    return SpadegymMultiTurnEnv(levels=levels, tasks=tasks, seed=seed, hinted=hinted, max_turns=max_turns, **kwargs)
