"""The designer memory: bounded, frontier/avoid selection, JSON persistence."""

from __future__ import annotations

import json

from spadegym.designers.base import LevelSummary
from spadegym.designers.memory import DesignerMemory, MemoryEntry, code_excerpt

SKILL = "Optimization"


def entry(i: int, win_rate: float | None, regret: float = 0.0, skill: str = SKILL) -> MemoryEntry:
    return MemoryEntry(f"e{i}", skill, f"class E{i}Env: ...", win_rate, regret, 0.0)


def test_bounded_oldest_out() -> None:
    memory = DesignerMemory(capacity=3)
    for i in range(5):
        memory.add(entry(i, 0.5))
    assert [e.env_id for e in memory.entries()] == ["e2", "e3", "e4"]
    memory.add(entry(2, None))  # refreshed: newest again, keeps its measured win rate
    assert [e.env_id for e in memory.entries()] == ["e3", "e4", "e2"]
    assert memory.entries()[-1].win_rate == 0.5


def test_selection_frontier_by_regret_and_extremes_to_avoid() -> None:
    memory = DesignerMemory()
    memory.add(entry(1, 0.5, regret=0.1))
    memory.add(entry(2, 0.3, regret=0.6))
    memory.add(entry(3, 0.95))
    memory.add(entry(4, 0.02))
    memory.add(entry(5, 0.88))  # neither frontier nor extreme
    memory.add(entry(6, 0.5, regret=0.9, skill="Spatial Reasoning"))  # other skill
    memory.add(entry(7, None))  # not measured yet
    chosen = memory.select(SKILL, k_frontier=2, k_avoid=1)
    assert [e.env_id for e in chosen.frontier] == ["e2", "e1"]
    assert [e.env_id for e in chosen.too_easy] == ["e3"]
    assert [e.env_id for e in chosen.too_hard] == ["e4"]
    assert not memory.select("Causal Inference")


def test_observe_level_summaries() -> None:
    memory = DesignerMemory()
    memory.observe([LevelSummary("lvl", SKILL, 0.4, 0.9, 0.5, 0.7, source="class LvlEnv:\n    pass\n")])
    (only,) = memory.entries()
    assert (only.env_id, only.win_rate, only.regret, only.score) == ("lvl", 0.4, 0.5, 0.7)
    assert "LvlEnv" in only.code_excerpt


def test_state_round_trips_through_json() -> None:
    memory = DesignerMemory(capacity=5)
    for i in range(4):
        memory.add(entry(i, i / 4, regret=0.1 * i))
    state = json.loads(json.dumps(memory.state_dict()))
    again = DesignerMemory()
    again.load_state_dict(state)
    assert again.capacity == 5 and again.entries() == memory.entries()
    assert again.skill_stats(SKILL) == memory.skill_stats(SKILL)


def test_code_excerpt_cuts_at_a_line() -> None:
    source = "\n".join(f"line_{i} = {i}" for i in range(400))
    excerpt = code_excerpt(source, 200)
    assert len(excerpt) < 220 and excerpt.endswith("# ...")
    assert all(line.startswith(("line_", "#")) for line in excerpt.splitlines())
