"""The validation gate: static, runtime, feasibility and degeneracy sections -> one Verdict.

    verdict = validate_source(code, "maze.py")
    if not verdict.valid:
        print(verdict.category, verdict.feedback())
"""

from __future__ import annotations

import ast
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path

from ..envfile import SourceError, read_source
from ..envfile.folder import folder_files
from ..sandbox import Sandbox, sandbox_or_own
from .config import ValidationConfig
from .evidence import gather_evidence
from .quality_checks import degeneracy_checks, feasibility_checks
from .runtime_checks import runtime_checks
from .static_checks import static_section
from .verdict import STATIC, Check, Verdict, failed

# Runtime checks without which the later sections have nothing to read.
_GATING = ("loads", "reset_runs")


def validate_source(source: str, filename: str = "<env>", *, hint: str | None = None,
                    sandbox: Sandbox | None = None, config: ValidationConfig | None = None) -> Verdict:
    """Check one environment source; ``hint`` overrides the file's own hint for the leak check.

    Pass a ``sandbox`` to reuse its zygote across many files (much faster); the
    environment code only ever runs inside it.
    """
    config = config or ValidationConfig()
    start = time.perf_counter()
    checks, tree = static_section(source, filename, config)
    if not any(c.blocking for c in checks):
        with sandbox_or_own(sandbox, config.sandbox) as box:
            checks += _runtime_sections(box, source, filename, hint, config, tree)
    return Verdict.from_checks(filename, checks, time.perf_counter() - start)


def _runtime_sections(box: Sandbox, source: str, filename: str, hint: str | None,
                      config: ValidationConfig, tree: ast.Module | None = None) -> list[Check]:
    evidence = gather_evidence(box, source, filename, config, tree)
    checks = runtime_checks(evidence, config)
    if any(c.blocking and c.name in _GATING for c in checks):
        return checks
    return checks + feasibility_checks(evidence) + degeneracy_checks(evidence, config, hint)


def expand_paths(paths: list[str | Path]) -> list[Path]:
    """Files as given; directories become the ``*.py`` files anywhere below them, sorted.

    Pools nest their files (``games/gen_0001/game_*.py``). A missing path, or
    paths that hold no file at all, raise SourceError.
    """
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files += folder_files(p)  # inside the folder and regular, or refused in one sentence
        elif p.exists():
            files.append(p)
        else:
            raise SourceError(f"{p}: no such file or directory; check the path.")
    if not files:
        shown = ", ".join(str(p) for p in paths) or "(no paths)"
        raise SourceError(f"{shown}: no environment files (*.py) found; give files or a directory that holds them.")
    return files


def _validate_file(path: Path, hint: str | None, box: Sandbox, config: ValidationConfig) -> Verdict:
    try:
        source = read_source(path)
    except SourceError as exc:
        return Verdict.from_checks(str(path), [failed("readable", str(exc), STATIC)], 0.0)
    return validate_source(source, str(path), hint=hint, sandbox=box, config=config)


def _overlapped(tasks: Iterable[Callable[[], Verdict]], jobs: int) -> Iterator[Verdict]:
    """Run ``jobs`` verdicts at once, in threads (a verdict mostly waits for its workers); in order."""
    pending: deque[Future[Verdict]] = deque()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        try:
            for task in tasks:
                pending.append(pool.submit(task))
                if len(pending) > jobs:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:  # the caller stopped early: do not probe the rest
                future.cancel()


def validate_sources(sources: Iterable[tuple[str, str, str | None]], *, sandbox: Sandbox | None = None,
                     config: ValidationConfig | None = None) -> list[Verdict]:
    """``validate_source`` of each ``(source, filename, hint)``, ``config.jobs`` files at once on one sandbox.

    The verdicts, in order, are those of validating the files one after the other.
    """
    config = config or ValidationConfig()
    with sandbox_or_own(sandbox, config.sandbox) as box:
        return list(_overlapped((partial(validate_source, source, filename, hint=hint, sandbox=box, config=config)
                                 for source, filename, hint in sources), config.jobs))


def validate_paths(paths: list[str | Path], *, hint: str | None = None, sandbox: Sandbox | None = None,
                   config: ValidationConfig | None = None) -> Iterator[Verdict]:
    """Validate files and directories (their ``*.py`` files, sorted), one Verdict per file, in order.

    ``config.jobs`` files are probed at once on the one sandbox: most of a
    verdict's time is spent waiting for workers, so overlapping files pays.
    """
    config = config or ValidationConfig()
    files = expand_paths(paths)
    with sandbox_or_own(sandbox, config.sandbox) as box:
        yield from _overlapped((partial(_validate_file, path, hint, box, config) for path in files), config.jobs)
