"""A pool of environment files as levels: a fixed-pool baseline, or the seed levels of an adaptive run.

    designer = PoolDesigner(pool_files("spade-pool/games"))            # the pool alone, replayed
    designer = PoolDesigner(files, then=make_designer("mutation"))     # the pool first, then mutation

The files (spadegym's own, or a SPADE reference pool such as the reference's
published static pool, nested folders included) are proposed once, in order,
``context.count`` per round, each through the validation gate like any
proposal. Alone, the loop then replays them from the level buffer
(``pool_overrides``); with ``then``, that designer fills every slot the pool no
longer does and learns only from its own candidates (the pool declares the
abilities of the designer after it: learning, checkpointed weights).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..envfile import SourceError, inspect_source, read_source
from ..errors import UserError
from ..text import safe_text
from ..validate.verdict import Verdict
from .base import Abilities, Candidate, DesignContext, Designer, Feedback, Level, Lineage, Params, abilities
from .judge import DUPLICATE

VERSION = "pool-1"
_ID_PREFIX = "pool-"


class PoolError(UserError, ValueError):
    """The pool path holds no environment files."""


class PoolConfig(BaseModel):
    """A pool of environment files to play (``spadegym run --pool DIR``)."""

    model_config = {"extra": "forbid"}

    path: str | None = Field(None, description="Environment files (a file or a directory, searched recursively; e.g. a SPADE pool): with designer 'pool' the fixed pool the run replays, with any other designer the run's first levels.")


def pool_files(path: str | Path, setting: str = "--pool") -> list[Path]:
    """The environment files of a pool: a file, or every ``*.py`` below a directory, sorted (errors name ``setting``)."""
    from ..validate.gate import expand_paths

    try:
        return expand_paths([path])
    except SourceError as exc:
        raise PoolError(f"{setting}: {exc}") from None


class PoolDesigner:
    """Proposes a pool's files, in order; then, optionally, another designer's levels (whose abilities it has)."""

    def __init__(self, files: list[Path], then: Designer | None = None):
        if not files:
            raise PoolError("the pool holds no environment files; give a directory of *.py files.")
        self.files = list(files)
        self.then = then
        self.abilities = abilities(then) if then is not None else Abilities()
        self.name = "pool" if then is None else f"pool+{then.name}"
        self.cursor = 0  # next file to propose

    async def propose(self, context: DesignContext) -> list[Candidate]:
        picked = self.files[self.cursor:self.cursor + context.count]
        candidates = [self._candidate(path, self.cursor + i, context.skill) for i, path in enumerate(picked)]
        self.cursor += len(picked)
        if len(candidates) < context.count and self.then is not None:
            candidates += await self.then.propose(replace(context, count=context.count - len(candidates)))
        return candidates

    def _candidate(self, path: Path, index: int, skill: str) -> Candidate:
        try:
            source = read_source(path)
        except SourceError as exc:  # the gate reports the file; the run goes on
            source = f"# {exc}\n"
        knobs: dict[str, Any] = {}
        try:
            info = inspect_source(source, str(path))
            skill, knobs = info.skill or skill, dict(info.difficulty)  # an imported level keeps its knobs
        except SourceError:
            pass
        level = Level(source, skill=skill, params=Params(knobs=knobs), lineage=Lineage(operator="pool", designer=VERSION))
        return Candidate(level, candidate_id=f"{_ID_PREFIX}{index:05d}", pool_file=str(path))

    def state_dict(self) -> dict[str, Any]:
        return {"cursor": self.cursor, "then": self.then.state_dict() if self.then is not None else None}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.cursor = int(state.get("cursor", 0))
        if self.then is not None and state.get("then") is not None:
            self.then.load_state_dict(state["then"])

    def update(self, feedback: list[Feedback]) -> Any:
        """The designer after the pool learns from its own candidates only (the pool does not adapt)."""
        if not self.abilities.learns:
            return None
        return self.then.update([f for f in feedback if not f.pooled])  # type: ignore[union-attr]

    def save(self, directory: Path) -> Any:
        """The designer after the pool's weights (a pool has none of its own)."""
        return self.then.save(directory) if self.abilities.checkpointed else None  # type: ignore[union-attr]

    def restore(self, directory: Path) -> None:
        if self.abilities.checkpointed:
            self.then.restore(directory)  # type: ignore[union-attr]

    def pool_size(self) -> int:
        return len(self.files)

    @property
    def exhausted(self) -> bool:
        """A fixed pool (no designer after it) that has proposed every file: it has nothing new, ever."""
        return self.then is None and self.cursor >= len(self.files)


#: Refused files a stopped run names one line each; the rest are counted.
REFUSALS_SHOWN = 5


def nothing_to_play(path: str, refused: list[tuple[str, str]]) -> str:
    """The sentence that stops a run whose pool files were all refused, then one line per file (the first few)."""
    lines = [f"  {safe_text(file)}: {safe_text(why)}" for file, why in refused[:REFUSALS_SHOWN]]
    if len(refused) > REFUSALS_SHOWN:
        lines.append(f"  and {len(refused) - REFUSALS_SHOWN} more")
    return (f"the gate refused all {len(refused)} files of the pool {safe_text(path)}, so the run has nothing to "
            f"play; fix them (spadegym validate {safe_text(path)} shows every check) or pass another --pool:\n"
            + "\n".join(lines))


def refusal_reason(verdict: Verdict | None, refusal: str | None) -> str:
    """Why the gate (or the judge) refused a file, in a few words: its first failed check, else the refusal's name."""
    failed = verdict.failed if verdict is not None else []
    if failed:
        return " ".join(f"{failed[0].name}: {failed[0].message}".split())[:200]
    return "the same code as another file of the pool" if refusal == DUPLICATE else (refusal or "invalid")
