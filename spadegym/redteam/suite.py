"""The regression suite: a directory that stands alone and can be committed anywhere.

    SUITE/
      manifest.json          one entry per case (see ``Case``), the search's figures, the format
      README.md              the card for humans: target, what was found, how to score an agent
      SHA256SUMS             checksums of every file above and below (sha256sum -c SHA256SUMS)
      cases/<id>.py          the minimal environment (standard library only)
      cases/<id>.original.py the environment as first found

``load_suite`` reads a suite (checking the checksums) or, for ``spadegym
eval``, a plain pool directory of environment files, whose cases get seeds
0..3.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import TypeAdapter, ValidationError

from ..envfile import SourceError, inspect_source, read_source
from ..envfile.folder import ENV_FILE_BYTES, folder_files, inside, read_bytes, read_text
from ..errors import UserError
from ..outputs import make_folder, write_text
from ..text import safe_text

FORMAT = "spadegym-suite/1"
MANIFEST, CARD, SUMS, CASES = "manifest.json", "README.md", "SHA256SUMS", "cases"
#: The largest manifest and checksum list a suite may have (a suite of thousands of cases has a few MB).
MANIFEST_BYTES = 64 << 20
#: Seeds of the cases of a plain pool directory (a suite's manifest fixes its own).
POOL_SEEDS = (0, 1, 2, 3)
#: The most seeds one case may ask eval to play (a suite's case has a few; a manifest may not ask for unbounded work).
CASE_SEEDS = 4096
_FAMILY = re.compile(r"^FAMILY = ['\"]([\w-]+)['\"]", re.M)  # rendered family files name their family


def _named(exc: SourceError, file: Path) -> str:
    """``exc``'s sentence, naming ``file`` when it does not already."""
    text = str(exc)
    return text if text.startswith(str(file)) else f"{safe_text(str(file))}: {text}"


class SuiteError(UserError):
    """A suite or pool directory that cannot be used (missing, altered, malformed)."""


@dataclass
class Case:
    """One regression case: the environment the target failed, and how it failed."""

    id: str
    file: str  # relative to the suite directory
    skill: str
    seeds: list[int]
    family: str | None = None
    knobs: dict[str, Any] = field(default_factory=dict)
    original_file: str | None = None
    original_knobs: dict[str, Any] = field(default_factory=dict)
    size: int | None = None  # family levels: sum of knob level indices; files: lines of code
    original_size: int | None = None
    cluster: str = ""
    failure_pattern: str = ""
    failure_rate: float | None = None  # the target's, on fresh seeds
    failure_interval: list[float] | None = None  # 95% Wilson interval
    failure_plays: int = 0
    solution_return: float | None = None  # return of the file's solution() (None: it has none)
    hint_win_rate: float | None = None  # hinted arm, for files without solution()
    transcript: str = ""  # a short failing transcript of the target
    hint: str | None = None
    minimise_steps: int = 0
    shrink_steps: list[dict[str, Any]] = field(default_factory=list)  # each smaller version tried, and its verdict
    sha256: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_CASE = TypeAdapter(Case)


def case_of(data: dict[str, Any]) -> Case:
    """A case read back from its ``to_dict`` (each field checked against its type)."""
    return _CASE.validate_python(data)


#: A case's fields that name files of the suite: read as they are (``inside`` confines them), never shown.
_PATHS = frozenset({"file", "original_file"})


def _safe(value: Any, key: str = "") -> Any:
    """A manifest's JSON with every string but a path made safe text (no control sequences, no lone
    surrogates): names, skills, hints and messages reach agents, terminals, XML and web pages."""
    if isinstance(value, str):
        return value if key in _PATHS else safe_text(value)
    if isinstance(value, list):
        return [_safe(v, key) for v in value]
    if isinstance(value, dict):
        return {safe_text(k): _safe(v, k) for k, v in value.items()}
    return value


class FoundCase(NamedTuple):
    """A case a search confirmed, with the files it writes: the minimal one and the one first found."""

    case: Case
    minimal: str  # the minimal failing source (the case's file)
    original: str  # the source first found (kept beside it when it differs)


def _first_error(exc: Exception) -> str:
    """What is wrong, in a few words: a validation error's first field and message, else the error's text."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        return f"{'.'.join(map(str, first['loc'])) or 'a case'}: {first['msg']}"[:200]
    return " ".join(str(exc).split())[:200]


@dataclass
class Suite:
    """A suite read back: where it lives, its manifest, and each case's source."""

    path: Path
    manifest: dict[str, Any]
    cases: list[Case]
    sources: dict[str, str]  # case id -> source

    @property
    def pass_at(self) -> float:
        return float(self.manifest.get("pass_at", 0.5))

    @property
    def name(self) -> str:
        name = self.manifest.get("name")
        return name if isinstance(name, str) and name else safe_text(self.path.name)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: The name of a case file a search writes (``c007-take_away.py``, ``c007-take_away.original.py``).
CASE_FILE = re.compile(r"c\d{3,}-[\w-]+(\.original)?\.py")


def check_cases_folder(path: Path, own_cases: bool = False) -> None:
    """Refuse a suite folder whose ``cases/`` spadegym did not make: a suite writes only the case files it lists
    and deletes nothing, so a link there, or a folder already holding files, is someone else's. With
    ``own_cases`` (a search that writes its suite as it goes, or resumes), the folder may hold case files, plain
    ones named as a search names them, which the search rewrites."""
    folder = path / CASES
    if folder.is_symlink() or (folder.exists() and (not folder.is_dir() or any(
            not (own_cases and CASE_FILE.fullmatch(entry.name) and entry.is_file() and not entry.is_symlink())
            for entry in folder.iterdir()))):
        raise SuiteError(f"{folder} already exists and is not an empty folder; a suite writes its cases into a "
                         "folder of its own, so choose a new --out.")


def write_suite(path: Path, cases: list[FoundCase], info: dict[str, Any], own_cases: bool = False) -> Path:
    """Write a suite: ``cases`` with their files; ``info`` goes into the manifest.
    Every file is written inside ``path`` without following a link, and the checksums list exactly these files.
    ``own_cases``: rewrite the case files of a search's earlier writes (``check_cases_folder``)."""
    check_cases_folder(path, own_cases)
    make_folder(path / CASES, path)
    entries, written = [], []
    for found in cases:
        case, minimal, original = found.case, found.minimal, found.original
        case.file = f"{CASES}/{case.id}.py"
        write_text(path / case.file, minimal, path)
        written.append(case.file)
        case.sha256 = sha256(minimal)
        if original and original != minimal:
            case.original_file = f"{CASES}/{case.id}.original.py"
            write_text(path / case.original_file, original, path)
            written.append(case.original_file)
        entries.append(case.to_dict())
    manifest = {"format": FORMAT, "name": path.name, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **info, "cases": entries}
    texts = {MANIFEST: json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", CARD: card(manifest)}
    for name, text in texts.items():
        write_text(path / name, text, path)
    files = [MANIFEST, CARD, *sorted(written)]
    lines = [f"{hashlib.sha256((path / f).read_bytes()).hexdigest()}  {f}" for f in files]
    write_text(path / SUMS, "\n".join(lines) + "\n", path)
    return path


def card(manifest: dict[str, Any]) -> str:
    """The suite's README: what it tests, what was found, how to use it."""
    cases = manifest["cases"]
    search = manifest.get("search", {})
    rows = []
    for c in cases:
        low, high = c.get("failure_interval") or (None, None)
        rate = "-" if c.get("failure_rate") is None else f"{c['failure_rate']:.2f} [{low:.2f}, {high:.2f}]"
        shrunk = "" if c.get("original_size") in (None, c.get("size")) else f" (from {c['original_size']})"
        rows.append(f"| `{c['id']}` | {c['skill']} | {c.get('family') or 'written'} | "
                    f"{c.get('size')}{shrunk} | {rate} | {c.get('failure_pattern')} | `{c['cluster']}` |")
    return "\n".join([
        f"# Regression suite `{manifest['name']}`",
        "",
        f"Found by `spadegym redteam` against `{manifest.get('target')}` with the designer "
        f"`{manifest.get('designer')}` ({search.get('proposals', '?')} proposals, seed {manifest.get('seed')}). "
        f"Each case is an environment the target failed although it can be won, shrunk to its simplest "
        f"failing form and replayed on fresh seeds; cases it failed only by chance were left out.",
        "",
        f"{len(cases)} cases in {len({c['cluster'] for c in cases})} clusters. Failure rates are the target's "
        "on fresh seeds, with their 95% interval; size is how far a level sits above its family's easiest "
        "(sum of knob levels) or, for written files, its lines of code.",
        "",
        "| case | skill | family | size | failure rate | how it failed | cluster |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## Use",
        "",
        "```bash",
        f"spadegym eval {manifest['name']} --agent openai:MODEL@URL --junit results.xml --json",
        f"spadegym eval {manifest['name']} --agent A --agent B --html scorecard.html",
        f"spadegym eval {manifest['name']} --agent A --baseline old.json --min-pass-rate 0.8   # CI gate",
        "```",
        "",
        f"A case passes when the agent wins at least {manifest.get('pass_at', 0.5):g} of its plays on the "
        "seeds the manifest fixes. The environment files need only the Python standard library; "
        "`sha256sum -c SHA256SUMS` checks that nothing was altered.",
        "",
    ])


def load_suite(path: str | Path) -> Suite:
    """A suite directory (checksums checked) or a pool directory of environment files."""
    path = Path(path)
    if not path.is_dir():
        raise SuiteError(f"{path} is not a directory; pass a suite written by `spadegym redteam` or a folder of "
                         "environment files.")
    if not (path / MANIFEST).exists():
        return _pool(path)
    # Every name the suite holds is read inside it: a regular file of bounded size, or one sentence.
    try:
        manifest = _safe(json.loads(read_text(inside(path, MANIFEST), MANIFEST_BYTES, "a suite manifest")))
        cases = [_CASE.validate_python(c) for c in manifest["cases"]]  # each field of its type, or one sentence
        _check_manifest(manifest, cases)
    except SourceError as exc:
        raise SuiteError(str(exc)) from None
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise SuiteError(f"{path / MANIFEST} is not a suite manifest ({_first_error(exc)}); regenerate it with "
                         "spadegym redteam.") from None
    _check_sums(path)
    sources = {}
    for case in cases:
        try:
            sources[case.id] = read_text(inside(path, case.file), ENV_FILE_BYTES, "an environment file")
        except SourceError as exc:
            raise SuiteError(f"case {case.id}: {exc}") from None
    return Suite(path, manifest, cases, sources)


def _check_manifest(manifest: dict[str, Any], cases: list[Case]) -> None:
    """What eval relies on beyond each case's types: a pass mark it can compare, unique ids, bounded work."""
    pass_at = manifest.get("pass_at", 0.5)
    if isinstance(pass_at, bool) or not isinstance(pass_at, (int, float)) or not 0 < pass_at <= 1:
        raise ValueError(f"pass_at: {str(pass_at)[:40]!r} is not a share of plays above 0 and at most 1")
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValueError(f"cases: the id {case.id[:80]!r} is listed twice")
        seen.add(case.id)
        if len(case.seeds) > CASE_SEEDS:
            raise ValueError(f"cases: {case.id[:80]!r} lists {len(case.seeds):,} seeds, more than {CASE_SEEDS:,}")


def _check_sums(path: Path) -> None:
    if not (path / SUMS).exists():
        return
    try:
        lines = read_text(inside(path, SUMS), MANIFEST_BYTES, "a checksum list").splitlines()
        for line in lines:
            digest, _, name = line.partition("  ")
            target = inside(path, name)
            if not target.exists():
                raise SuiteError(f"{target} is listed in {SUMS} but missing; restore it or regenerate the suite.")
            if hashlib.sha256(read_bytes(target, MANIFEST_BYTES, "a suite's file")).hexdigest() != digest:
                raise SuiteError(f"{target} does not match its checksum in {SUMS}; it was altered after the suite "
                                 "was written (restore it, or remove SHA256SUMS to score the edited suite).")
    except SourceError as exc:
        raise SuiteError(f"{SUMS}: {exc}") from None


def _pool(path: Path) -> Suite:
    # The same files ``spadegym validate DIR`` reads (a SPADE reference pool's games/ folder included).
    try:
        files = [p for p in folder_files(path) if not p.name.startswith("_")]
    except SourceError as exc:
        raise SuiteError(str(exc)) from None
    if not files:
        raise SuiteError(f"{path} holds no {MANIFEST} and no .py environment files; pass a suite or a pool.")
    cases, sources = [], {}
    for file in files:
        name = safe_text(file.relative_to(path).with_suffix("").as_posix())  # a file name may hold anything
        try:
            source = read_source(file)  # its errors name the file
            info = inspect_source(source, file.name)
        except SourceError as exc:
            raise SuiteError(_named(exc, file)) from None
        family = _FAMILY.search(source)
        case = Case(id=name, file=file.relative_to(path).as_posix(), skill=info.skill or "unknown",
                    seeds=list(POOL_SEEDS), family=family.group(1) if family else None,
                    knobs=dict(info.difficulty), cluster=name, sha256=sha256(source))
        cases.append(case)
        sources[case.id] = source
    return Suite(path, {"format": "pool", "name": path.name, "pass_at": 0.5}, cases, sources)


def suite_rows(suite: Suite) -> list[dict[str, Any]]:
    """The cases as environment rows, in the shape a run's environments export in."""
    from ..envfile import normalized_code_hash

    rows = []
    for case in suite.cases:
        rate = case.failure_rate
        rows.append({
            "env_id": case.id, "code": suite.sources[case.id], "hint": case.hint, "skill": case.skill,
            "family": case.family, "knobs": case.knobs, "lineage": {"original_knobs": case.original_knobs},
            "meta": {k: v for k, v in case.to_dict().items() if k not in ("id", "hint", "knobs", "original_knobs")},
            "code_hash": normalized_code_hash(suite.sources[case.id]), "round": None,
            "scores": None if rate is None else {"round": None, "win_rate": 1.0 - rate, "win_rate_hint": case.hint_win_rate,
                                                 "regret": None, "oracle_regret": None, "designer_reward": None,
                                                 "plays": case.failure_plays, "plays_hint": None},
        })
    return rows


def export_suite(path: str | Path, format: str = "jsonl", out: str | Path | None = None) -> Path:
    """Export a suite's cases as a run's environments export (jsonl, parquet, hf or a spade pool)."""
    from ..store.export import write_rows

    suite = load_suite(path)
    name = {"jsonl": "envs.jsonl", "parquet": "envs.parquet", "hf": "envs", "spade": "pool"}.get(format, "envs")
    target = Path(out) if out is not None else suite.path / "exports" / name
    # A default output lies in the suite, which is data: nothing below it is followed as a link.
    return write_rows("envs", suite_rows(suite), format, target, root=suite.path if out is None else None)
