"""Constrained sampling: rows of a generated batch that may only write the tokens their constraint allows.

A constraint (``designers.edit_grammar.EditRow`` is one) says which token ids may
come next and is told each token its row sampled; the processor masks every
other token's logit before sampling. Rows without a constraint sample freely.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class TokenConstraint(Protocol):
    """What may come next in one row, and what came."""

    finished: bool  # the row ended (or left the constraint): sample freely from here

    def allowed(self) -> list[int]: ...

    def advance(self, token_id: int) -> None: ...


class ConstrainedRows:
    """A ``transformers`` logits processor applying one constraint (or None) per row of a batch."""

    def __init__(self, constraints: Sequence[TokenConstraint | None]):
        self.constraints = list(constraints)
        self._steps = 0

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if self._steps:  # the last column is what each row sampled at the previous step
            for row, constraint in enumerate(self.constraints):
                if constraint is not None and not constraint.finished:
                    constraint.advance(int(input_ids[row, -1]))
        self._steps += 1
        # A new tensor, never the one passed in: transformers keeps that one as the step's raw logits, and the
        # log-probs recorded for training are the model's own, not the constrained distribution's.
        scores = scores.clone()
        for row, constraint in enumerate(self.constraints):
            if constraint is None or constraint.finished:
                continue
            ids = torch.tensor(constraint.allowed(), dtype=torch.long, device=scores.device)
            kept = scores[row, ids].clone()
            scores[row] = float("-inf")
            scores[row, ids] = kept
        return scores
