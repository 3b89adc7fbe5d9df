"""The validator's records: one ``Check`` per property, one ``Verdict`` per file.

Messages are single sentences written for a designer model: which line or call
failed, why, and what to change. ``Verdict.feedback()`` joins the failed ones
into the text of a repair prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Check categories beyond the sandbox's failure categories (timeout, memory,
# crash, protocol, forbidden, exception, invalid_return), which runtime checks reuse.
STATIC = "static"              # the source breaks a rule readable without running it
CONTRACT = "contract"          # runs, but a returned value breaks the environment contract
NONDETERMINISTIC = "nondeterministic"
INFEASIBLE = "infeasible"      # the file's own solution does not win
DEGENERATE = "degenerate"      # won without skill, or reward carries no signal
LEAK = "leak"                  # the answer is visible in the observation or the hint

ERROR = "error"
WARNING = "warning"            # reported, but does not make the file invalid


@dataclass
class Check:
    """The outcome of one single-purpose check."""

    name: str
    passed: bool
    message: str = ""
    category: str | None = None
    severity: str = ERROR

    @property
    def blocking(self) -> bool:
        """A failed error-level check makes the environment invalid."""
        return not self.passed and self.severity == ERROR

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "message": self.message,
                "category": self.category, "severity": self.severity}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Check:
        return cls(data["name"], bool(data["passed"]), data.get("message", ""), data.get("category"),
                   data.get("severity", ERROR))


@dataclass
class Verdict:
    """Whether one environment source passes the gate, and why not."""

    file: str
    valid: bool
    category: str | None
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0

    @classmethod
    def from_checks(cls, file: str, checks: list[Check], seconds: float) -> Verdict:
        first = next((c for c in checks if c.blocking), None)
        return cls(file=file, valid=first is None, category=first.category if first else None,
                   checks=checks, seconds=seconds)

    @property
    def failed(self) -> list[Check]:
        """Failed checks that make the file invalid, in the order they ran."""
        return [c for c in self.checks if c.blocking]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if not c.passed and c.severity == WARNING]

    def feedback(self) -> str:
        """The failed checks' messages, one per line, for a repair prompt."""
        return "\n".join(f"- {c.message}" for c in self.failed + self.warnings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """Read back what ``to_dict`` wrote (e.g. from the run store)."""
        return cls(data["file"], bool(data["valid"]), data.get("category"),
                   [Check.from_dict(c) for c in data.get("checks", [])], float(data.get("seconds", 0.0)))

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "valid": self.valid, "category": self.category,
                "checks": [c.to_dict() for c in self.checks], "seconds": round(self.seconds, 4)}


def passed(name: str, message: str = "") -> Check:
    return Check(name, True, message)


def failed(name: str, message: str, category: str, severity: str = ERROR) -> Check:
    return Check(name, False, message, category, severity)
