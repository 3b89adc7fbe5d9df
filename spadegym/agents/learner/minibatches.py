"""An update's decisions in minibatches, with memory bounded however many and large the views.

A minibatch holds at most ``steps`` decisions and ``entries`` feature entries.
Each view is built once, and the minibatches stay built (with their row sorts)
for the passes that read them again while all kept hold at most ``keep``
entries; past that, a minibatch is rebuilt each time it is read. A round of
ordinary episodes is kept whole (built once, as before); a round of huge menus
costs time, never memory without end.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .features import Featurizer
from .model import Batch, make_batch

#: A decision's view: (observation, valid actions).
Decision = tuple[str, list[str]]


class Minibatches:
    """Decisions ``order`` split into minibatches; ``mbs[k]`` is (decision indices, Batch)."""

    def __init__(self, featurizer: Featurizer, decisions: Sequence[Decision], order: np.ndarray,
                 steps: int, entries: int, keep: int):
        self.featurizer, self.decisions = featurizer, decisions
        self.groups: list[np.ndarray] = []
        self._kept: dict[int, Batch] = {}
        kept = 0
        current: list[int] = []
        views = []
        size = 0

        def close() -> None:
            nonlocal kept
            if kept + size <= keep:
                self._kept[len(self.groups)] = make_batch(views)
                kept += size
            self.groups.append(np.array(current, dtype=np.int64))

        for i in order:
            view = featurizer.view(*decisions[i])
            if current and (len(current) == steps or size + view.size > entries):
                close()
                current, views, size = [], [], 0
            current.append(int(i))
            views.append(view)
            size += view.size
        if current:
            close()

    def __len__(self) -> int:
        return len(self.groups)

    def __getitem__(self, k: int) -> tuple[np.ndarray, Batch]:
        idx = self.groups[k]
        batch = self._kept.get(k)
        if batch is None:
            batch = make_batch([self.featurizer.view(*self.decisions[i]) for i in idx])
        return idx, batch

    @property
    def kept(self) -> int:
        """Minibatches kept built."""
        return len(self._kept)
