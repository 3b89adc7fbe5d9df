"""Judging a candidate, written once: use its verdict or validate it, name the refusal, drop duplicates.

The self-play loop, ``spadegym design`` and the red team all judge through ``Judge``,
so a proposal is refused for the same reason, under the same name, wherever it is made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..validate.verdict import Verdict
from .base import Candidate

#: The refusal of a valid file whose code is already in the pool or earlier in the batch.
DUPLICATE = "duplicate"


@dataclass
class Proposal:
    """A candidate with what the judge said about it."""

    candidate: Candidate
    name: str  # the name it was validated under (an env id in a run, a file stem in a pool)
    verdict: Verdict | None  # None: refused before the gate was asked (a duplicate, see ``Judge``)
    code_hash: str
    refusal: str | None = None  # None: usable; else why not (a verdict category, a designer refusal, "duplicate")

    @property
    def valid(self) -> bool:
        return self.refusal is None

    @property
    def env_id(self) -> str | None:
        """The level's id once accepted (its name); None for a refused proposal."""
        return self.name if self.valid else None


def refusal(candidate: Candidate, verdict: Verdict) -> str | None:
    """None for a usable candidate; else its name: the designer's own reason, or the verdict's category."""
    if verdict.valid and candidate.refusal is None:
        return None
    if candidate.refusal and candidate.refusal != "invalid":
        return candidate.refusal
    return verdict.category or candidate.refusal or "invalid"


class Judge:
    """Judges candidates in order; a file whose code was seen before is refused as a duplicate (``_duplicate``).

    A caller that pays for each gate call (the red team, whose gate counts toward a search's cost) passes its
    ``gate``: a candidate with no code, or with code judged before, is then refused without a call.
    """

    def __init__(self, sandbox: Any = None, validation: Any = None, known: Callable[[str], Any] | None = None):
        self.sandbox, self.validation = sandbox, validation
        self.known = known or (lambda code_hash: False)  # codes already in the pool
        self.accepted: set[str] = set()  # codes accepted in this batch
        self.judged: set[str] = set()  # codes judged in this batch, valid or not (files with code only)

    def __call__(self, candidate: Candidate, name: str, verdict: Verdict | None = None, *,
                 gate: Callable[[Candidate, str], Verdict] | None = None) -> Proposal:
        """Judge one candidate: by ``verdict`` when the caller validated it already, else by its own, else by
        ``gate`` (refusing first what needs no gate call), else by the sandbox's gate."""
        code_hash = candidate.level.code_hash
        if gate is not None and verdict is None:
            early = self._before_gate(candidate, name, code_hash)
            if early is not None:
                return early
        verdict = verdict or candidate.verdict or (gate or self.validate)(candidate, name)
        reason = refusal(candidate, verdict)
        if reason is None and self._duplicate(code_hash, gated=True):
            reason = DUPLICATE
        if reason is None:
            self.accepted.add(code_hash)
        if candidate.source:
            self.judged.add(code_hash)
        return Proposal(candidate, name, verdict, code_hash, reason)

    def _duplicate(self, code_hash: str, gated: bool) -> bool:
        """The one duplicate rule: the code is in the pool, or earlier in the batch. Once a verdict is in
        (``gated``), only the codes accepted earlier count (the same code may pass with another hint); before
        the gate, any code judged earlier does, since its gate call would be paid again."""
        return code_hash in (self.accepted if gated else self.judged) or bool(self.known(code_hash))

    def _before_gate(self, candidate: Candidate, name: str, code_hash: str) -> Proposal | None:
        """The refusal that needs no gate call, if any: a candidate with no code (the designer's refusal), or
        a duplicate."""
        if not candidate.source:
            return Proposal(candidate, name, candidate.verdict, code_hash, candidate.refusal or "no_code")
        if self._duplicate(code_hash, gated=False):
            return Proposal(candidate, name, None, code_hash, DUPLICATE)
        return None

    def validate(self, candidate: Candidate, name: str) -> Verdict:
        from ..validate import validate_source  # the gate: imported late, it pulls in the sandbox's checks

        return validate_source(candidate.source, f"{name}.py", hint=candidate.hint, sandbox=self.sandbox,
                               config=self.validation)


def share(count: int, parts: int, turn: int = 0) -> list[int]:
    """``count`` split over ``parts`` as evenly as possible; the remainder goes to ``turn``'s parts first.

    Rotating the remainder with ``turn`` keeps one part from getting the extra
    every time the same parts come round again.
    """
    extra = count % parts
    return [count // parts + (1 if (i - turn) % parts < extra else 0) for i in range(parts)]


def split_count(count: int, skills: Sequence[str]) -> list[tuple[str, int]]:
    """``count`` proposals spread over ``skills`` as evenly as possible, in order (skills with none left out)."""
    return [(s, k) for s, k in zip(skills, share(count, len(skills))) if k > 0]
