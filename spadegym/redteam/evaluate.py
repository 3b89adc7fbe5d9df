"""Score any agent on a suite (or a pool directory), on the seeds its manifest fixes.

    results = evaluate_suite("suites/qwen", ["openai:qwen3-8b@http://127.0.0.1:8000/v1"])
    results["agents"]["openai:qwen3-8b@..."]["pass_rate"]

Each case is played ``plays`` times on each of its seeds, without the hint; it
is passed when the agent wins at least the suite's ``pass_at`` share. All
cases of one agent are played in one batch over the sandbox pool (and the LLM
client's concurrency), as in runs. ``regressions`` compares with an earlier
results file: the cases it passed that are failed now; ``fixed`` the other way: the cases it failed
that are passed now (what training fixed, when the baseline is an earlier checkpoint).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..jsondata import MAX_BYTES, UntrustedJSONError, loads
from ..level import Level
from ..loop.agent import build_agent
from ..rollout import Episode, Play, RolloutConfig, run_episodes
from ..sandbox import Sandbox, SandboxConfig
from .suite import Suite, load_suite

RESULTS_FORMAT = "spadegym-eval/1"


async def _score_agent(suite: Suite, spec: str, sandbox: Sandbox, *, plays: int, seed: int,
                       rollout: RolloutConfig, agent_options: dict[str, Any],
                       on_episode: Callable[[Episode], None] | None) -> dict[str, Any]:
    agent = build_agent(spec, seed=seed, **agent_options)
    envs = {c.id: Level(suite.sources[c.id]) for c in suite.cases}
    schedule = [Play(c.id, s, hinted=False, group=i) for c in suite.cases for i, s in enumerate(c.seeds)
                for _ in range(plays)]
    started = time.perf_counter()
    try:
        episodes = await run_episodes(sandbox, envs, schedule, agent, rollout, on_episode=on_episode)
    finally:
        await agent.aclose()
    seconds = time.perf_counter() - started
    by_case: dict[str, list[Episode]] = defaultdict(list)
    for ep in episodes:
        by_case[ep.env_id].append(ep)
    cases = {}
    for case in suite.cases:
        eps = by_case[case.id]
        scored = [e for e in eps if e.scored]
        wins = sum(e.success for e in scored)
        rate = wins / len(scored) if scored else 0.0
        lost = next((e for e in scored if not e.success), None)
        errors = sorted({e.failure for e in eps if not e.scored and e.failure})
        cases[case.id] = {
            "passed": bool(scored) and rate >= suite.pass_at, "win_rate": round(rate, 4), "wins": wins,
            "plays": len(scored), "errors": errors, "seconds": round(sum(e.seconds for e in eps), 3),
            "skill": case.skill, "cluster": case.cluster, "family": case.family,
            "message": "" if lost is None else _lost_line(lost),
        }
    passed = sum(c["passed"] for c in cases.values())
    return {"pass_rate": round(passed / len(cases), 4) if cases else 0.0, "passed": passed, "cases": cases,
            "by_skill": _grouped(cases, "skill"), "by_cluster": _grouped(cases, "cluster"),
            "seconds": round(seconds, 3), "episodes": len(episodes)}


def _grouped(cases: dict[str, dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for c in cases.values():
        groups[str(c[key])].append(c["passed"])
    return {k: {"passed": sum(v), "cases": len(v), "pass_rate": round(sum(v) / len(v), 4)}
            for k, v in sorted(groups.items())}


def _lost_line(ep: Episode) -> str:
    last = ep.turns[-1].action if ep.turns else None
    return f"seed {ep.seed}: return {ep.ret:g} after {len(ep.turns)} turns (last action {last!r})"


async def evaluate_suite_async(suite: str | Path | Suite, agents: list[str], *, plays: int = 1, seed: int = 0,
                               rollout: RolloutConfig | None = None, sandbox: SandboxConfig | None = None,
                               options_for: Callable[[str], dict[str, Any] | None] | None = None,
                               on_episode: Callable[[Episode], None] | None = None) -> dict[str, Any]:
    if not agents:
        raise UserError("name at least one agent to score, e.g. --agent openai:MODEL@URL.")
    loaded = suite if isinstance(suite, Suite) else load_suite(suite)
    rollout = rollout or RolloutConfig()
    results: dict[str, Any] = {}
    with Sandbox(sandbox) as box:
        for spec in agents:
            # ``options_for(spec)``: ``make_agent``'s options for each agent, built for its kind by the caller.
            options = (options_for(spec) if options_for else None) or {}
            results[spec] = await _score_agent(loaded, spec, box, plays=plays, seed=seed, rollout=rollout,
                                               agent_options=options, on_episode=on_episode)
    return {"format": RESULTS_FORMAT, "suite": loaded.name, "path": str(loaded.path), "pass_at": loaded.pass_at,
            "plays": plays, "cases": [c.id for c in loaded.cases],
            "skills": {c.id: c.skill for c in loaded.cases}, "agents": results}


def evaluate_suite(suite: str | Path | Suite, agents: list[str], **options: Any) -> dict[str, Any]:
    """Play every agent on every case of the suite; see the module docstring for the result's shape."""
    return asyncio.run(evaluate_suite_async(suite, agents, **options))


def load_results(path: str | Path) -> dict[str, Any]:
    """An earlier ``--json`` results file (the whole file, or its last line when it holds several), checked to
    have the shape ``regressions`` and ``fixed`` read: a baseline is data, and it is read before any case is
    played, so a malformed one costs nothing."""
    try:
        if Path(path).stat().st_size > MAX_BYTES:
            raise ValueError(f"it holds more than {MAX_BYTES:,} bytes")
        text = Path(path).read_text(encoding="utf-8").strip()
        data = loads(text.splitlines()[-1] if text.startswith("{") and "\n{" in text else text, "the file")
    except (OSError, ValueError, IndexError) as exc:
        why = str(exc) if isinstance(exc, UntrustedJSONError) else f"{type(exc).__name__}: {exc}"
        raise UserError(f"cannot read the baseline results {path} ({why[:200]}); pass a file written by "
                        "spadegym eval --json.") from None
    if not isinstance(data, dict) or "agents" not in data:
        raise UserError(f"{path} holds no eval results (no 'agents'); pass a file written by spadegym eval --json.")
    if malformed := _malformed(data["agents"]):
        raise UserError(f"{path} is not eval results ({malformed[:200]}); pass a file written by spadegym eval --json.")
    return data


def _malformed(agents: Any) -> str | None:
    """What in a baseline's ``agents`` is not the shape eval writes (agent -> "cases" -> case -> "passed"), if any."""
    if not isinstance(agents, dict):
        return f"'agents' is a {type(agents).__name__}, not a table of agents"
    for spec, result in agents.items():
        cases = result.get("cases", {}) if isinstance(result, dict) else None
        if not isinstance(cases, dict):
            return f"agent {spec!r} has no table of cases"
        for cid, case in cases.items():
            if not isinstance(case, dict) or not isinstance(case.get("passed", False), bool):
                return f"case {cid!r} of agent {spec!r} is not a result with 'passed' true or false"
    return None


def regressions(results: dict[str, Any], baseline: dict[str, Any]) -> dict[str, list[str]]:
    """Per agent: the cases the baseline passed that it fails now.

    An agent is compared with the baseline's results for the same spec, else with
    the baseline's first agent (a new model scored against the old one).
    """
    out: dict[str, list[str]] = {}
    base_agents = baseline.get("agents", {})
    fallback = next(iter(base_agents.values()), {"cases": {}})
    for spec, result in results["agents"].items():
        base = base_agents.get(spec, fallback)
        out[spec] = [cid for cid, c in result["cases"].items()
                     if base.get("cases", {}).get(cid, {}).get("passed") and not c["passed"]]
    return out


def fixed(results: dict[str, Any], baseline: dict[str, Any]) -> dict[str, list[str]]:
    """Per agent: the cases the baseline failed that it passes now (matched as ``regressions`` matches them)."""
    out: dict[str, list[str]] = {}
    base_agents = baseline.get("agents", {})
    fallback = next(iter(base_agents.values()), {"cases": {}})
    for spec, result in results["agents"].items():
        base = base_agents.get(spec, fallback).get("cases", {})
        out[spec] = [cid for cid, c in result["cases"].items()
                     if cid in base and not base[cid].get("passed") and c["passed"]]
    return out
