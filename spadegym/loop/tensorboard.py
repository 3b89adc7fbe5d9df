"""TensorBoard scalars of every round summary, written under ``<run dir>/tensorboard/``.

Optional: only where the ``tensorboard`` package is installed (the ``tensorboard`` extra); otherwise the board is silently inactive. The step of
every scalar is the round number, so a resumed run (which opens a new event file
in the same folder) continues the curves where they stopped. Only committed
rounds reach the board: the loop adds a summary after its round is in the store.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..figures import finite_or_none

#: Folder inside the run directory that holds the event files.
BOARD_DIR = "tensorboard"

#: Section (TensorBoard groups tags by the part before the first slash) of each top-level summary key.
_SECTIONS = {
    "win_rate": "agent", "win_rate_hint": "agent", "return_mean": "agent", "return_mean_hint": "agent",
    "regret_mean": "agent", "episodes": "agent",
    "proposals": "designer", "valid": "designer", "designer_reward_mean": "designer",
    "difficulty_new_mean": "designer", "hint_oracle_corr": "designer",
    "played": "curriculum", "replayed": "curriculum", "band_fraction": "curriculum",
    "difficulty_mean": "curriculum", "buffer_size": "curriculum",
    "seconds": "timing",
}
#: Nested summary dicts whose keys become ``<section>/<key>``.
_NESTED = {"timings": "timing", "learner": "learner", "buffer": "buffer", "refusals": "refusals",
           "skill_mix": "skill_mix", "episode_failures": "failures", "heldout_by_family": "heldout",
           "heldout_by_level": "heldout_level", "heldout_by_suite": "heldout_suite", "designer_watch": "designer_watch"}


def _number(value: Any) -> float | None:
    return finite_or_none(value) if isinstance(value, (int, float)) else None  # text is never a scalar


def summary_scalars(summary: dict[str, Any]) -> dict[str, float]:
    """The numeric fields of a round summary as TensorBoard tags (``agent/win_rate``, ``buffer/size``, ...).

    Unknown top-level numbers land under ``round/``; ``None`` and non-numbers are skipped.
    """
    tags: dict[str, float] = {}
    for key, value in summary.items():
        if key == "round":
            continue  # the step, not a scalar
        if isinstance(value, dict):
            section = _NESTED.get(key, key)
            for sub, inner in value.items():
                number = _number(inner)
                if number is not None:
                    tags[f"{section}/{sub}"] = number
            continue
        number = _number(value)
        if number is None:
            continue
        if key.startswith("heldout_"):
            tags[f"heldout/{key.removeprefix('heldout_')}"] = number
        else:
            tags[f"{_SECTIONS.get(key, 'round')}/{key}"] = number
    return tags


def available() -> bool:
    try:
        import tensorboard.summary.writer.event_file_writer  # noqa: F401
    except ImportError:
        return False
    return True


class ScalarBoard:
    """Writes one event per round; inactive when disabled or when ``tensorboard`` is not installed."""

    def __init__(self, run_dir: str | Path | None) -> None:
        """``run_dir=None`` turns the board off."""
        self._writer: Any = None
        self.logdir: Path | None = None
        if run_dir is None or not available():
            return
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.logdir = Path(run_dir) / BOARD_DIR
        # flush_secs is large: the loop flushes once per round, after the round is committed.
        self._writer = EventFileWriter(str(self.logdir), flush_secs=3600)

    @property
    def active(self) -> bool:
        return self._writer is not None

    def add(self, summary: dict[str, Any]) -> None:
        """Write the scalars of one round summary at step ``summary["round"]`` and flush."""
        if self._writer is None:
            return
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary

        values = [Summary.Value(tag=tag, simple_value=v) for tag, v in summary_scalars(summary).items()]
        self._writer.add_event(Event(wall_time=time.time(), step=int(summary["round"]),
                                     summary=Summary(value=values)))
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> ScalarBoard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
