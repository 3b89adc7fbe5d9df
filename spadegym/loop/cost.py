"""What a round of a run with a local model will cost, said once before the first round.

A model on a CPU can take hours over a round sized for a fast agent, so the
run first says how many episodes and proposals a round holds, the bound on
their tokens, and minutes estimated from a rate measured on the spot.
"""

from __future__ import annotations

from typing import Any

from .config import RunConfig


def round_cost(config: RunConfig, loop: Any) -> str | None:
    """One line (an estimate) for a run with an ``hf:`` role; None for one without."""
    policy = getattr(loop.agent, "policy", None) or getattr(loop.designer, "policy", None)
    if policy is None or not hasattr(policy, "measure_rate"):
        return None
    episodes = config.envs_per_round * (config.plays + config.hint_plays)
    agent = config.agent.kind == "hf"
    rows = min(config.train.generation_batch, max(1, episodes if agent else config.envs_per_round))
    # The rate is measured where the policy samples itself; a generation server's is not known here.
    rate = policy.measure_rate(rows) if config.train.generation == "transformers" else None
    parts = []
    if agent:
        tokens = config.train.max_new_tokens
        parts.append(f"{episodes} episodes ({config.envs_per_round} levels x {config.plays + config.hint_plays} "
                     f"plays) of up to {tokens} tokens a turn, {config.rollout.max_turns} turns where a level sets "
                     f"no turn budget{_taking('each turn of them all', episodes * tokens, rate)}")
    if config.designer.kind == "hf":
        per = designer_tokens(config)
        parts.append(f"up to {config.envs_per_round} proposals of up to {per} tokens"
                     f"{_taking('them all', config.envs_per_round * per, rate)}")
    at = f", at {rate:.0f} tokens/s measured here" if rate else ""
    return (f"round cost (an estimate{at}): {'; '.join(parts)}, plus training and held-out evaluation. "
            "Smaller rounds: envs_per_round, plays, hint_plays, train.max_new_tokens.")


def designer_tokens(config: RunConfig) -> int:
    """The most tokens one proposal of an ``hf:`` designer writes in its mode."""
    designer = config.llm_designer
    if designer.mode == "edit":
        return designer.edit_max_tokens
    written = config.train.designer_max_new_tokens
    if designer.mode == "write":
        written *= 1 + config.train.designer_repair_turns
    return written + min(designer.hint_max_tokens, config.train.designer_max_new_tokens)


def _taking(what: str, tokens: int, rate: float | None) -> str:
    """``: WHAT takes ~N min`` at ``rate`` tokens/s; nothing without a rate."""
    if not rate:
        return ""
    seconds = tokens / rate
    return f": {what} takes ~" + (f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s")
