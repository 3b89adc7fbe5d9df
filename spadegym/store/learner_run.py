"""``learner:RUN``: a run directory names the learner of its last complete round (users need not know the layout)."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from ..agents.registry import AGENTS, AgentSpecError
from ..specs import Spec
from .runstore import DB_NAME, RunStore

S = TypeVar("S", str, Spec)


def run_learner(spec: S) -> S:
    """``learner:RUN`` as ``learner:CHECKPOINT`` of the run's last complete round; any other spec as given."""
    parsed = AGENTS.parse(spec)
    run = Path(parsed.argument).expanduser()
    if parsed.kind != "learner" or not parsed.argument or not (run / DB_NAME).is_file():
        return spec
    with RunStore.open(run) as store:
        checkpoint = store.learner_checkpoint()
    if checkpoint is None:
        raise AgentSpecError(f"run {parsed.argument} has no learner checkpoint (its agent is not the built-in learner, "
                             "or no round has finished); give a run of `spadegym run --agent learner`, or a "
                             "checkpoint directory.")
    resolved = Spec(parsed.kind, str(checkpoint))
    return resolved if isinstance(spec, Spec) else resolved.text
