"""TRL environment mode: spadegym levels in your own ``GRPOTrainer`` script.

    from trl import GRPOConfig, GRPOTrainer
    from spadegym.adapters.trl_env import environment_factory, level_dataset

    trainer = GRPOTrainer(model=model, args=GRPOConfig(...), processing_class=tokenizer,
                          train_dataset=level_dataset("pool/", rows=256),
                          environment_factory=environment_factory("pool/"))

TRL makes one environment per rollout from the factory, calls
``reset(**row)`` with the dataset row (its ``level_id`` and ``seed``; the
returned text is added to the prompt), exposes the public methods as tools
(here one: ``act``), and scores the rollout with ``get_reward``: the
episode's return by spadegym's return rule, 0 for an unfinished episode.

A live curriculum: pass a run directory instead of a pool. The dataset then
names no level (``level_id`` is empty), and each reset draws from the run's
buffer as it stands at that moment, weighted by its replay scores.

A model too small to call tools yet (SmolLM2-135M writes no tool call at all)
gets no signal from the game's reward alone: every rollout earns 0. Pass
``reply_reward`` beside it (``reward_funcs=[reply_reward]``): a rollout that
called no tool is played with the action its reply names (spadegym's forgiving
rule), and earns a share for an action the game lists, the whole for a tool
call, so a group's rollouts differ and GRPO learns to answer with an action.

The model's chat template must render tool calls. ``with_tool_calling(tokenizer)``
gives a ChatML template without them (SmolLM2's, the model ``spadegym models
prepare`` offers) TRL's ChatML template with tools, which TRL both parses and
trains with.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..sandbox import Sandbox
from .levels import LevelSource, RunLevels, open_levels
from .session import PlaySession

INSTRUCTIONS = ("Play the game below. Take each move with the act tool (one action per call) until the game "
                "says it is over.")
#: Every dataset row starts with it, so that no chat template's default system prompt shows.
SYSTEM_PROMPT = "You play text games by calling the act tool."


class SpadegymToolEnv:
    """One rollout's environment: ``reset`` starts an episode, the ``act`` tool plays one turn.

    Its public methods are what TRL shows the model as tools, so it has no others.
    """

    def __init__(self, levels: LevelSource, sandbox: Sandbox | None = None, hinted: bool = False,
                 max_turns: int = 25):
        self._session = PlaySession(levels, sandbox=sandbox, actions="raw", hinted=hinted, max_turns=max_turns)
        self._return: float | None = None
        self._valid_actions: list[str] | None = None
        self._acted = False

    def reset(self, level_id: str | None = None, seed: int | None = None, **row: Any) -> str:
        first = self._session.reset(seed=seed, level_id=level_id or None)
        self._return, self._acted = None, False
        self._valid_actions = first.info.get("valid_actions")
        return f"{INSTRUCTIONS}\n\n{first.observation}"

    def act(self, action: str) -> str:
        """Take one action in the game and read what happens next.

        Args:
            action: The action to take, exactly as the game names it.
        """
        if self._session.done:
            return "The game is over; no more actions are taken."
        self._acted = True
        moved = self._session.step(action)
        self._valid_actions = moved.info.get("valid_actions")
        if not moved.done:
            return moved.observation
        self._return = moved.info["return"]
        return f"{moved.observation}\nThe game is over (return {self._return:g})."

    def get_reward(self) -> float:
        return self._return if self._return is not None else 0.0

    def _score_reply(self, reply: str) -> float:
        """``reply_reward``'s score of this rollout: see there."""
        from ..agents.hf import forgiving_action

        if self._acted:
            return 1.0
        if self._session.done:
            return 0.0
        action = forgiving_action(reply, self._valid_actions)
        if action is None:
            return 0.0
        named = self._valid_actions is not None and action in self._valid_actions
        self.act(action)
        return REPLY_CREDIT if named else 0.0


def reply_reward(completions: list[Any], environments: list[Any], **_: Any) -> list[float | None]:
    """A reward for ``GRPOTrainer(reward_funcs=[reply_reward], environment_factory=...)``: 1 for a rollout that
    called the act tool; for one that did not, its last reply is played as one action (the valid action it names,
    as spadegym's forgiving rule reads it) and earns ``REPLY_CREDIT`` when the game lists that action, else 0.

    A model that never calls the tool then still sees rollouts that differ (and, through the played action, the
    game's own reward, which ``get_reward`` adds), so GRPO has a signal to learn the form of an action from.
    """
    return [env._score_reply(_reply_text(completion)) if isinstance(env, SpadegymToolEnv) else None
            for completion, env in zip(completions, environments)]


#: What a reply earns that names a valid action without calling the tool (a tool call earns 1).
REPLY_CREDIT = 0.5


def _reply_text(completion: Any) -> str:
    """The text of a completion's last assistant message (TRL passes conversations as lists of messages)."""
    if isinstance(completion, str):
        return completion
    replies = [m.get("content") or "" for m in completion if isinstance(m, dict) and m.get("role") == "assistant"]
    return replies[-1] if replies else ""


def environment_factory(levels: LevelSource | str | Path, *, hinted: bool = False,
                        max_turns: int = 25) -> Callable[[], SpadegymToolEnv]:
    """A zero-argument factory for ``GRPOTrainer(environment_factory=...)`` over a pool or a live run."""
    source = levels if not isinstance(levels, (str, Path)) else open_levels(levels)

    def make() -> SpadegymToolEnv:
        return SpadegymToolEnv(source, hinted=hinted, max_turns=max_turns)

    return make


def level_dataset(levels: LevelSource | str | Path, rows: int = 256, seed: int = 0, prompt: str = "",
                  system: str = SYSTEM_PROMPT):
    """A ``datasets.Dataset`` of ``rows`` rows: a conversational prompt (``system``, then ``prompt``), a
    ``level_id`` and an instance ``seed``.

    Over a pool, levels are drawn by weight; over a live run, ``level_id`` is empty so that each
    reset draws from the run's buffer as it is then. The observation is added to ``prompt`` at reset.
    """
    from datasets import Dataset

    source = levels if not isinstance(levels, (str, Path)) else open_levels(levels)
    rng = random.Random(seed)
    live = isinstance(source, RunLevels)
    pool = [] if live else source.levels()
    ids = [""] * rows if live else rng.choices([lv.level_id for lv in pool], weights=[lv.weight for lv in pool], k=rows)
    return Dataset.from_dict({
        "prompt": [[{"role": "system", "content": system}, {"role": "user", "content": prompt}] for _ in range(rows)],
        "level_id": ids,
        "seed": [rng.getrandbits(31) for _ in range(rows)],
    })


def with_tool_calling(tokenizer: Any) -> Any:
    """``tokenizer``, able to render tool calls: as it is when its chat template can, else with TRL's ChatML
    template with tools when its own is ChatML without them (SmolLM2's); one sentence otherwise."""
    from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

    if supports_tool_calling(tokenizer):
        return tokenizer
    try:
        shown = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
    except Exception:  # noqa: BLE001 - any template that cannot render a user turn is refused below
        shown = ""
    if "<|im_start|>user\nhi<|im_end|>" not in shown:
        raise UserError("the tokenizer's chat template cannot render tool calls and is not ChatML; give it a chat "
                        "template with tools (TRL ships some in trl/chat_templates) or use a model made for tool use.")
    tokenizer.chat_template = qwen2_5_chat_template  # ChatML with <tool_call> blocks, which TRL knows how to parse
    return tokenizer
