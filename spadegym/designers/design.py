"""Generate a static pool: a designer proposes, the gate validates, files land in a folder.

    summary = design(make_designer("mutation"), 20, None, "pool/")

Layout of ``out_dir``::

    NAME.py, NAME.json          one valid environment and its hint + metadata
    rejected/NAME.py, .json     refused proposals with their verdicts (no .py when there was no code)
    summary.json                the DesignSummary

Candidates are judged by the same ``Judge`` as in a run: one that already
carries a verdict (the LLM designer validates inside its repair loop) is not
validated twice; the others (mutation designer) go through the gate here.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..envfile import SourceError, inspect_source
from .base import SKILLS, Candidate, DesignContext, Designer, ModelDesigner
from .judge import Judge, Proposal, split_count

#: Called after each proposal is judged: (candidate, valid, refusal reason or None).
OnJudged = Callable[[Candidate, bool, "str | None"], None]


@dataclass
class DesignSummary:
    """What one ``design`` call produced."""

    designer: str
    out_dir: str
    proposals: int = 0
    valid: int = 0
    valid_first_attempt: int = 0
    repaired: int = 0  # valid only after repair turns
    refused: dict[str, int] = field(default_factory=dict)  # reason -> count
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0
    designer_stats: dict[str, Any] = field(default_factory=dict)  # what the designer itself counted

    @property
    def proposals_per_second(self) -> float:
        return self.proposals / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["proposals_per_second"] = round(self.proposals_per_second, 3)
        data["seconds"] = round(self.seconds, 3)
        return data


def design(designer: Designer, count: int, skills: Sequence[str] | None, out_dir: str | Path,
           sandbox: Any = None, *, seed: int = 0, validation: Any = None,
           on_judged: OnJudged | None = None) -> DesignSummary:
    """Propose ``count`` environments over ``skills`` (default: all six), validate and write them."""
    from ..sandbox import sandbox_or_own

    out = Path(out_dir)
    (out / "rejected").mkdir(parents=True, exist_ok=True)
    skills = list(skills or SKILLS)
    start = time.perf_counter()
    contexts = [DesignContext(skill=s, count=k, round=0, seed=seed) for s, k in split_count(count, skills)]
    candidates = _propose_all(designer, contexts)

    summary = DesignSummary(designer=designer.name, out_dir=str(out))
    refused: Counter[str] = Counter()
    with sandbox_or_own(sandbox, validation.sandbox if validation is not None else None) as box:
        judge = Judge(box, validation)
        for index, cand in enumerate(candidates):
            judged = judge(cand, _file_name(index, cand))
            summary.proposals += 1
            if judged.valid:
                summary.valid += 1
                summary.valid_first_attempt += cand.attempts <= 1
                summary.repaired += cand.attempts > 1
                summary.files.append(_write(out, judged))
            else:
                refused[judged.refusal] += 1
                _write(out / "rejected", judged)
            if on_judged is not None:
                on_judged(cand, judged.valid, judged.refusal)
    summary.refused = dict(sorted(refused.items()))
    if isinstance(designer, ModelDesigner):
        summary.designer_stats = designer.report()
    summary.seconds = time.perf_counter() - start
    (out / "summary.json").write_text(json.dumps(summary.to_dict(), indent=2) + "\n", encoding="utf-8")
    return summary


def _propose_all(designer: Designer, contexts: list[DesignContext]) -> list[Candidate]:
    """All contexts at once (a model-backed designer's calls overlap), in the contexts' order."""
    async def everything() -> list[Candidate]:
        groups = await asyncio.gather(*(designer.propose(ctx) for ctx in contexts))
        return [c for group in groups for c in group]

    return asyncio.run(everything())


def _file_name(index: int, cand: Candidate) -> str:
    try:
        label = inspect_source(cand.source).class_name
    except SourceError:
        label = cand.family or cand.skill.split()[0]
    label = re.sub(r"(?<!^)(?=[A-Z])", "_", label).lower().removesuffix("_env")
    label = re.sub(r"[^a-z0-9_]+", "_", label).strip("_")[:40] or "env"
    return f"{index:03d}_{label}"


def _write(folder: Path, judged: Proposal) -> str:
    cand, name = judged.candidate, judged.name
    level = cand.level.to_dict()  # the source goes beside it, as the file
    record = {"name": name, **{key: level[key] for key in ("skill", "hint", "family", "knobs")},
              "candidate_id": cand.candidate_id, "attempts": cand.attempts, "lineage": level["lineage"],
              "refusal": judged.refusal, "verdict": judged.verdict.to_dict(), "meta": cand.stored_meta()}
    if cand.source.strip():
        (folder / f"{name}.py").write_text(cand.source, encoding="utf-8")
    (folder / f"{name}.json").write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    return str(folder / f"{name}.py")
