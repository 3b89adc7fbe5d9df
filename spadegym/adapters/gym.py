"""Gymnasium: any environment file, pool or live run as a ``gymnasium.Env`` with text spaces.

    import gymnasium
    env = gymnasium.make("spadegym.adapters.gym:spadegym/Level-v0", path="maze.py")  # imports this module first
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(info["valid_actions"][0])

``path`` is an environment file, a folder of them or a run directory; with more
than one level, each reset draws one (by the run's replay weights for a run).
Observations and actions are ``spaces.Text`` over printable ASCII plus newline
and tab: any other character an environment prints is escaped (``é`` becomes
``\\u00e9``), and an observation longer than ``max_observation_chars`` is cut
with a marker, so every observation lies in the space. Actions go to the
environment as they are (``actions="boxed"`` reduces a language model's reply
to its last ``\\boxed{}`` first). The environment runs in a sandbox worker.

Rewards: ``rewards="step"`` (default) pays each step the environment's own
reward; ``rewards="return"`` pays 0 until the last step and then the episode's
return, spadegym's terminal-reward return, so that summing wrappers such as
``RecordEpisodeStatistics`` show it. ``info["return"]`` holds it at the end. With ``"step"``, a level that
pays on the way sums past its return (0.1 for a key and 1.0 for the door: 1.1).

Episodes end within ``max_turns`` steps (25), the id's ``max_episode_steps``; to allow more, pass both
(``max_turns=40, max_episode_steps=40``).
"""

from __future__ import annotations

import copy
import string
from pathlib import Path
from typing import Any, Literal

import gymnasium
from gymnasium import spaces

from ..sandbox import Sandbox
from .levels import LevelSource, open_levels
from .rewards import RewardMode, paid_reward, reward_mode
from .session import PlaySession

#: The characters of both spaces: printable ASCII, newline and tab.
CHARSET = frozenset(c for c in string.printable if c not in "\r\x0b\x0c")
TRUNCATED = "\n...[truncated]"

ENV_ID = "spadegym/Level-v0"
#: The id with its module, which ``gymnasium.make`` imports first: Gymnasium 1.x loads no plugin entry points, so
#: this form is the one that works in a process that has not imported spadegym.
MAKE_ID = f"{__name__}:{ENV_ID}"
#: Turns an episode may take unless a level declares fewer (``max_turns``); also the id's ``max_episode_steps``.
DEFAULT_MAX_TURNS = 25


def escape_text(text: str, limit: int) -> str:
    """``text`` inside the space: characters outside ``CHARSET`` as Python escapes, then cut to ``limit``."""
    if not CHARSET.issuperset(text):
        text = "".join(c if c in CHARSET else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else
                                                 f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
                       for c in text)
    return text if len(text) <= limit else text[: limit - len(TRUNCATED)] + TRUNCATED


class SpadegymEnv(gymnasium.Env[str, str]):
    """One spadegym level source as a Gymnasium environment (text in, text out)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, path: str | Path | None = None, *, levels: LevelSource | None = None,
                 level_id: str | None = None, hinted: bool = False, actions: Literal["raw", "boxed"] = "raw",
                 max_turns: int = DEFAULT_MAX_TURNS, max_observation_chars: int = 8192, max_action_chars: int = 256,
                 render_mode: str | None = None, sandbox: Sandbox | None = None, rewards: RewardMode = "step"):
        if (path is None) == (levels is None):
            raise ValueError("pass either path= (an environment file, a folder of them or a run directory) "
                             "or levels= (a LevelSource).")
        self.levels = levels if levels is not None else open_levels(path)  # type: ignore[arg-type]
        self.level_id = level_id
        self.rewards = reward_mode(rewards)
        self.max_observation_chars = max_observation_chars
        self.observation_space = spaces.Text(max_length=max_observation_chars, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(max_length=max_action_chars, min_length=0, charset=CHARSET)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not supported; use 'ansi' or None.")
        self.render_mode = render_mode
        # Each step shows the hint again: a Gymnasium agent sees only the current observation.
        self.session = PlaySession(self.levels, sandbox=sandbox, actions=actions, hinted=hinted,
                                   hint_every_step=True, max_turns=max_turns)
        self._last = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        level_id = (options or {}).get("level_id", self.level_id)
        # The instance seed comes from the env's generator: reset() after reset(seed=s) is reproducible too.
        instance_seed = int(self.np_random.integers(0, 2**31 - 1))
        first = self.session.reset(seed=instance_seed, level_id=level_id)
        self._last = escape_text(first.observation, self.max_observation_chars)
        return self._last, copy.deepcopy(first.info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        moved = self.session.step(str(action))
        self._last = escape_text(moved.observation, self.max_observation_chars)
        reward = paid_reward(moved, self.rewards)
        return self._last, reward, moved.terminated, moved.truncated, copy.deepcopy(moved.info)

    def render(self) -> str | None:
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        self.session.close()
        super().close()


def register() -> None:
    """Register ``spadegym/Level-v0`` (done on import; calling it again is harmless). Its ``max_episode_steps`` is
    the turn budget of the environment's default ``max_turns``, so Gymnasium's TimeLimit and the level's own
    budget end an episode at the same step."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point=f"{__name__}:SpadegymEnv", nondeterministic=False,
                           max_episode_steps=DEFAULT_MAX_TURNS)


register()
