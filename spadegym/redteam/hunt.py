"""A red-team search from its settings to its suite: the builders, and the search run round after round.

    spadegym redteam -> redteam(config, out)
        new_search / open_search   the search's run store in OUT/hunt (a resumed search's settings checked)
        build_target               the frozen agent under test, from its spec
        build_designer             the search's designer (``search``, ``uniform``, or any designer spec)
        RedTeam.run                rounds until the budget is spent (``redteam.round``: one round, reading
                                   downward into ``redteam.confirmation``: cluster, shrink, confirm)
        write_suite                the suite, after every round and however the search stops
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.base import Agent
from ..designers.base import Designer, ModelDesigner
from ..errors import UserError
from ..executor import Executor, executor_validator, make_executor
from ..safety import is_safety_key, leaves
from ..specs import without_host
from ..store import RunStore, versions
from .clusters import ClusterMemory
from .config import SEARCH_DESIGNERS, RedTeamConfig
from .predict import Judging, PlayModel
from .round import RedTeam
from .search import SearchDesigner
from .space import SearchSpace, UniformDesigner
from .suite import check_cases_folder, write_suite

HUNT_DIR = "hunt"  # the search's run store, inside the suite directory (not part of the suite's checksums)


@dataclass
class RedTeamResult:
    suite: Path
    cases: int
    clusters: int
    proposals: int
    failures: int
    summaries: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"suite": str(self.suite), "cases": self.cases, "clusters": self.clusters,
                "proposals": self.proposals, "failures": self.failures}


def build_designer(config: RedTeamConfig, executor: Executor, memory: ClusterMemory,
                   model: PlayModel | None = None) -> Designer:
    """The search's designer; ``search`` and ``uniform`` draw from one space (``config.space``), and ``search``
    reads the search's memory of failures and won levels, and its model of the target's plays."""
    from ..designers.registry import DESIGNERS

    if config.designer.kind in SEARCH_DESIGNERS:
        space = SearchSpace(config.space, config.families)
        if config.designer.kind == "uniform":
            return UniformDesigner(space, config.seed)
        judging = Judging(config.plays, config.max_win_rate, config.confirm_seeds * config.confirm_plays,
                          config.min_failure_rate)
        return SearchDesigner(space, memory, config.seed, model, judging)
    # Its kind's sections of the config; a designer that validates as it writes (the LLM one) validates where
    # the search does.
    kind = DESIGNERS.kind(config.designer)
    extra = {"validator": executor_validator(executor, config.validation)} if kind.takes("validator") else {}
    return DESIGNERS.make(config.designer, config.seed, **kind.from_config(config), **extra)


def build_target(config: RedTeamConfig) -> Agent:
    from ..loop.agent import build_agent

    return build_agent(config.target, seed=config.seed, config=config)


async def redteam_async(config: RedTeamConfig, out: str | Path,
                        on_round: Callable[[dict[str, Any]], None] | None = None,
                        resume: bool = False) -> RedTeamResult:
    """Search, writing the suite to ``out`` after every round and however the search stops (finished, interrupted,
    a model server gone), so what it confirmed is kept; ``resume`` continues the search stored in ``out/hunt``."""
    out = Path(out)
    store = open_search(config, out) if resume else new_search(config, out)
    with make_executor(config.executor, config.sandbox, config.ray) as executor, store:
        target = build_target(config)
        memory, model = ClusterMemory(), PlayModel()
        designer = build_designer(config, executor, memory, model)
        team = RedTeam(config, executor, target, designer, store, memory, model)
        if resume:
            team.load_state_dict(store.load_state("redteam") or {}, store)

        def keep(summary: dict[str, Any]) -> None:
            write_suite(out, team.cases, team.suite_info(), own_cases=True)
            if on_round is not None:
                on_round(summary)
        try:
            summaries = await team.run(keep)
        finally:
            write_suite(out, team.cases, team.suite_info(), own_cases=True)  # first: a second Ctrl-C loses nothing
            await target.aclose()
            if isinstance(designer, ModelDesigner):
                designer.close()
    return RedTeamResult(out, len(team.cases), len({found.case.cluster for found in team.cases}), team.proposals,
                         team.failures, summaries)


def new_search(config: RedTeamConfig, out: Path) -> RunStore:
    """The store of a new search in ``out``, which must hold no suite and no search (a suite is never overwritten)."""
    if (out / HUNT_DIR).exists():
        raise UserError(f"{out} already holds a suite or a search; continue its search with the same command and "
                        "--resume (--budget N extends it), or choose a new --out (a suite is never overwritten).")
    if (out / "manifest.json").exists():
        raise UserError(f"{out} already holds a suite or a search; choose a new --out (a suite is never overwritten).")
    check_cases_folder(out)  # before the search: its cases would have nowhere of their own to go
    return RunStore.create(out / HUNT_DIR, config.model_dump(mode="json"), versions())


def open_search(config: RedTeamConfig, out: Path) -> RunStore:
    """The store of the search in ``out``, to go on with ``config``: the settings it began with, but for the safety
    settings (always the user's), the hosts of the target and the designer, and the budget (which may grow)."""
    if not (out / HUNT_DIR / "run.sqlite").is_file():
        raise UserError(f"{out} holds no search to resume ({HUNT_DIR}/run.sqlite is missing); start one with "
                        f"--out {out} without --resume.")
    check_cases_folder(out, own_cases=True)
    store = RunStore.open(out / HUNT_DIR)
    changed = changed_settings(store.config, config.model_dump(mode="json"))
    if changed:
        store.close()
        shown = ", ".join(repr(key) for key in changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
        raise UserError(f"{out} holds a search begun with other settings ({shown}); resume it with the settings it "
                        "began with (only the budget, the safety settings and the hosts may differ), or choose a "
                        "new --out.")
    return store


def changed_settings(stored: dict[str, Any], given: dict[str, Any]) -> list[str]:
    """The settings of the experiment that differ between a stored search and the one given to resume it."""
    was, now = leaves(stored), leaves(given)
    return [key for key in sorted(set(was) | set(now))
            if key != "budget" and not is_safety_key(key)
            and _without_host(key, was.get(key)) != _without_host(key, now.get(key))]


def _without_host(key: str, value: Any) -> Any:
    """A stored role's spec, parsed by its role's registry, without its server (``openai:MODEL@URL`` -> kind
    ``openai``, model ``MODEL``): where a model is served may change, its kind and model may not. Any other
    setting (or a spec no registry reads) as given."""
    from ..agents.registry import AGENTS
    from ..designers.registry import DESIGNERS

    registry = {"target": AGENTS, "designer": DESIGNERS}.get(key)
    if registry is None or not isinstance(value, str):
        return value
    try:
        return without_host(registry.parse(value))
    except UserError:
        return value


def redteam(config: RedTeamConfig, out: str | Path,
            on_round: Callable[[dict[str, Any]], None] | None = None, resume: bool = False) -> RedTeamResult:
    """Hunt the target's failures and write the regression suite to ``out`` (see the module docstring)."""
    import asyncio

    return asyncio.run(redteam_async(config, out, on_round, resume))
