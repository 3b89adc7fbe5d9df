"""``learner:RUN``: a run directory names the learner of its last complete round (users need not know the layout)."""

from __future__ import annotations

from pathlib import Path

from ..specs import AgentSpecError, Spec
from .runstore import DB_NAME, RunStore


def run_learner(spec: Spec) -> Spec:
    """``learner:RUN`` as ``learner:CHECKPOINT`` of the run's last complete round; any other spec as given.

    ``spec`` is parsed already (``AGENTS.parse``): this reads its kind and argument, never its text."""
    run = Path(spec.argument).expanduser()
    if spec.kind != "learner" or not spec.argument or not (run / DB_NAME).is_file():
        return spec
    with RunStore.open(run) as store:
        checkpoint = store.learner_checkpoint()
    if checkpoint is None:
        raise AgentSpecError(f"run {spec.argument} has no learner checkpoint (its agent is not the built-in learner, "
                             "or no round has finished); give a run of `spadegym run --agent learner`, or a "
                             "checkpoint directory.")
    return Spec(spec.kind, str(checkpoint))
