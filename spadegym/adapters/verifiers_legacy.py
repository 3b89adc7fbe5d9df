"""verifiers' classic API (the 0.3 line): a ``MultiTurnEnv`` that plays levels in the sandbox.

    import verifiers as vf
    env = vf.load_environment("spadegym-verifiers", levels="pool/", tasks=8)
    vf-eval spadegym-verifiers -a '{"levels": "pool/", "tasks": 8}' -m MODEL -b URL

verifiers 0.3 keeps its classic (v0) API beside the v1 one: ``load_environment``
and its ``vf-eval`` import the plugin package and call its
``load_environment(**args)``, which builds this environment. verifiers 0.4 has
only the v1 API (``verifiers_env``). One row is one episode of one level
instance; the row's prompt is the instance's first observation, read once when
the environment is built (an instance is the same for the same seed), so over a
live run the levels are drawn when it loads. Each assistant reply goes through
spadegym's action rule, the next observation is the next user turn, and the
episode's return (the one return rule) is the reward ``episode_return``.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import verifiers.legacy as vf
from datasets import Dataset

from .levels import draw, open_levels
from .session import PlaySession
from .verifiers_env import SYSTEM_PROMPT


def _rows(levels: str, tasks: int, seed: int, hinted: bool, max_turns: int) -> list[dict[str, Any]]:
    """One row per task: its level, instance seed and first observation."""
    source = open_levels(levels)
    rng = random.Random(seed)
    rows = []
    with PlaySession(source, hinted=hinted, max_turns=max_turns) as session:
        pool = source.levels()
        for _ in range(tasks):
            level_id = draw(pool, rng).level_id
            instance = rng.getrandbits(31)
            first = session.reset(seed=instance, level_id=level_id)
            rows.append({"question": first.observation, "answer": "",
                         "info": {"level_id": level_id, "seed": instance}})
    return rows


class SpadegymMultiTurnEnv(vf.MultiTurnEnv):
    """Plays one level instance per row: the level is the user, the model the player."""

    def __init__(self, levels: str, tasks: int = 64, seed: int = 0, hinted: bool = False, max_turns: int = 25,
                 **kwargs: Any):
        if not levels:
            raise ValueError("give levels=: an environment file, a pool folder or a run directory")
        self.levels, self.hinted, self.level_turns = levels, hinted, max_turns
        dataset = Dataset.from_list(_rows(levels, tasks, seed, hinted, max_turns))
        super().__init__(dataset=dataset, system_prompt=SYSTEM_PROMPT, rubric=vf.Rubric(funcs=[episode_return]),
                         max_turns=max_turns, **kwargs)

    async def setup_state(self, state: vf.State, **kwargs: Any) -> vf.State:
        session = PlaySession(open_levels(self.levels), hinted=self.hinted, max_turns=self.level_turns)
        info = state["info"]
        await asyncio.to_thread(session.reset, info["seed"], info["level_id"])
        state["spadegym_session"] = session
        state["spadegym_return"] = 0.0
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        last = messages[-1]
        reply = last.get("content") if isinstance(last, dict) else getattr(last, "content", "")
        moved = await asyncio.to_thread(state["spadegym_session"].step, str(reply or ""))
        response = [vf.UserMessage(content=moved.observation)]
        if moved.done:
            state["spadegym_return"] = float(moved.info.get("return", 0.0))
            state["final_env_response"] = response
        return response

    @vf.cleanup
    async def close_session(self, state: vf.State) -> None:
        session = state.pop("spadegym_session", None)
        if session is not None:
            await asyncio.to_thread(session.close)


def episode_return(state: vf.State) -> float:
    """The episode's return by spadegym's rule (0 for an episode that did not finish)."""
    return float(state.get("spadegym_return", 0.0))
