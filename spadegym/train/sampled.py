"""Tokens this process's models have sampled, counted token by token as they generate.

Progress lines read it during one long ``generate`` call, which finishes nothing
for minutes on a CPU; a process-wide count needs no handle on the policies.
"""

from __future__ import annotations

from typing import Any

_count = 0


def total() -> int:
    """Tokens sampled in this process so far, finished generations or not."""
    return _count


def add(tokens: int) -> None:
    global _count
    _count += tokens


class CountTokens:
    """A ``generate`` stopping criterion that stops nothing: it counts each step's rows still writing."""

    def __init__(self, eos_id: int | None, width: int):
        self.eos_id, self.width = eos_id, width
        self.finished: Any = None

    def __call__(self, input_ids: Any, scores: Any, **_: Any) -> Any:
        import torch

        if input_ids.shape[1] <= self.width:
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        last = input_ids[:, -1]
        writing = ~self.finished if self.finished is not None else torch.ones_like(last, dtype=torch.bool)
        add(int(writing.sum()))
        ended = last == self.eos_id if self.eos_id is not None else torch.zeros_like(writing)
        self.finished = ended if self.finished is None else (self.finished | ended)
        return torch.zeros_like(writing)
