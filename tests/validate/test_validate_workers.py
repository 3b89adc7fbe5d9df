"""How the gate spends sandbox workers: two fresh ones per file with solution(), three without,
and many files at once give the verdicts of one file after the other."""

from __future__ import annotations

from snippet_env import make_env
from test_validate_checks import BROKEN

from spadegym.validate import ValidationConfig, validate_source, validate_sources

UNSEEDED = dict(next(row[1] for row in BROKEN if row[0] == "unseeded_generator"))


def _spawns(sandbox, monkeypatch, source: str, config: ValidationConfig | None = None) -> tuple[int, object]:
    count = 0
    spawn = sandbox.spawn

    def counted(*args, **kwargs):
        nonlocal count
        count += 1
        return spawn(*args, **kwargs)

    monkeypatch.setattr(sandbox, "spawn", counted)
    verdict = validate_source(source, "vault.py", sandbox=sandbox, config=config)
    monkeypatch.undo()
    return count, verdict


def _outcome(verdict) -> tuple:
    """A verdict without its timing and messages (a nondeterministic file's messages quote random values)."""
    return verdict.valid, verdict.category, [(c.name, c.passed) for c in verdict.checks]


def test_a_file_with_a_solution_is_probed_in_two_fresh_workers(sandbox, monkeypatch):
    workers, verdict = _spawns(sandbox, monkeypatch, make_env())
    assert verdict.valid, verdict.feedback()
    assert workers == 2


def _outcome(verdict) -> tuple:
    """A verdict without its timing and messages (a nondeterministic file's messages quote random values)."""
    return verdict.valid, verdict.category, [(c.name, c.passed) for c in verdict.checks]


def test_a_file_without_a_solution_gets_a_fresh_worker_for_its_first_random_episode(sandbox, monkeypatch):
    workers, verdict = _spawns(sandbox, monkeypatch, make_env(solution=""))
    assert verdict.valid, verdict.feedback()
    assert workers == 3
    # The determinism check compares that episode with the twin's, both from fresh workers.
    workers, verdict = _spawns(sandbox, monkeypatch, make_env(solution="", **UNSEEDED))
    assert "deterministic" in {c.name for c in verdict.failed}


def test_random_workers_adds_fresh_workers_without_changing_the_verdict(sandbox, monkeypatch):
    shared, verdict = _spawns(sandbox, monkeypatch, make_env())
    fresh, alone = _spawns(sandbox, monkeypatch, make_env(), ValidationConfig(random_workers=4))
    assert fresh == shared + 4
    assert alone.to_dict() | {"seconds": 0} == verdict.to_dict() | {"seconds": 0}


def test_files_validated_together_get_the_verdicts_of_one_after_the_other(sandbox):
    sources = [(make_env(), "a.py", None), (make_env(**UNSEEDED), "b.py", None),
               (make_env(header="import socket"), "c.py", None), (make_env(solution=""), "d.py", "listen")]
    together = validate_sources(sources, sandbox=sandbox, config=ValidationConfig(jobs=3))
    alone = [validate_source(s, f, hint=h, sandbox=sandbox) for s, f, h in sources]
    assert [v.file for v in together] == ["a.py", "b.py", "c.py", "d.py"]
    assert [_outcome(v) for v in together] == [_outcome(v) for v in alone]
    assert [v.valid for v in together] == [True, False, False, True]
