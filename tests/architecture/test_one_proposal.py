"""One judged proposal, one judge: the self-play loop, ``spadegym design`` and the red team share them."""

from __future__ import annotations

import ast
from pathlib import Path

import spadegym

PACKAGE = Path(spadegym.__file__).parent


def _classes(name: str) -> list[str]:
    """Where the package defines a class called ``name`` (module paths, relative to the package)."""
    return sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(node, ast.ClassDef) and node.name == name)


def test_there_is_one_proposal_class_and_one_judge() -> None:
    assert _classes("Proposal") == ["designers/judge.py"]
    assert _classes("Judge") == ["designers/judge.py"]


def test_the_red_team_judges_through_the_loops_judge() -> None:
    from spadegym.designers.judge import Judge, Proposal
    from spadegym.redteam import round as red_round

    assert red_round.Judge is Judge and red_round.Proposal is Proposal
    assert not _classes("Judged")  # no protocol bridging two kinds of proposal
