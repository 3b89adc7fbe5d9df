"""Mixed sources: the run's designer, reasoning-gym tasks and pools propose together in one curriculum."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from rich.console import Console

from spadegym.designers.base import DesignContext, Feedback, LevelSummary
from spadegym.designers.mixed import MixedDesigner, SourcePart
from spadegym.designers.mutation import MutationDesigner
from spadegym.designers.pool import PoolDesigner, pool_files
from spadegym.designers.sources import SourceConfig, shares
from spadegym.errors import UserError
from spadegym.loop import RunConfig, load_config, run
from spadegym.store import RunStore

ENVS = Path(__file__).parents[1] / "fixtures" / "envs"
MATH = "Mathematical Reasoning"
TASK = "basic_arithmetic"


def _pool() -> PoolDesigner:
    return PoolDesigner(pool_files(ENVS))


def test_slots_are_dealt_by_share_in_any_batch_size_and_only_for_the_skills_a_source_trains() -> None:
    mixed = MixedDesigner(MutationDesigner(seed=0), [SourcePart("pool:a", _pool(), 0.25),
                                                     SourcePart("math-only", _pool(), 0.25, frozenset({MATH}))], 0.5)
    dealt = {"mutation": 0, "pool:a": 0, "math-only": 0}
    for count in [1, 2, 3, 1, 5] * 20:  # 240 slots, all for math
        for name, k in mixed.deal(MATH, count).items():
            dealt[name] += k
    assert dealt == {"mutation": 120, "pool:a": 60, "math-only": 60}
    other = mixed.deal("Spatial Reasoning", 300)  # the math-only source gets none; the rest keep their ratio
    assert other == {"mutation": 200, "pool:a": 100, "math-only": 0}


def test_a_source_that_comes_up_short_leaves_its_slots_to_the_designer() -> None:
    one_file = PoolDesigner(pool_files(ENVS / "number_guess.py"))
    mixed = MixedDesigner(MutationDesigner(seed=1), [SourcePart("pool:one", one_file, 0.5)], 0.5)
    first = asyncio.run(mixed.propose(DesignContext(skill=MATH, count=4)))
    later = asyncio.run(mixed.propose(DesignContext(skill=MATH, count=4)))
    assert [c.part for c in first].count("pool:one") == 1 and len(first) == 4
    assert {c.part for c in later} == {"mutation"} and len(later) == 4
    assert [c.candidate_id for c in first if c.part == "pool:one"] == ["pool:one/pool-00000"]


def test_composites_route_feedback_by_the_candidates_typed_origin_never_by_the_text_of_its_id() -> None:
    """A mix routes by ``Feedback.part``, a pool by ``Feedback.pooled`` (both copied from the candidate by
    ``told``); an id that merely looks like a part's or a pool's reaches the run's designer."""
    import ast

    from spadegym.designers.judge import Proposal
    from spadegym.designers.round import told

    for module in ("mixed", "pool"):
        tree = ast.parse((Path(__file__).parents[2] / "spadegym" / "designers" / f"{module}.py").read_text())
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "startswith"], module
    pool = PoolDesigner(pool_files(ENVS / "number_guess.py"), then=MutationDesigner(seed=3))
    cands = asyncio.run(pool.propose(DesignContext(skill=MATH, count=3)))
    assert [c.pool_file is not None for c in cands] == [True, False, False]
    assert cands[0].to_dict()["meta"] == {"file": cands[0].pool_file}
    seen: list[list[str]] = []
    pool.then.update = lambda feedback: seen.append([f.candidate_id for f in feedback])  # type: ignore[union-attr]
    proposals = [Proposal(c, f"e{i}", None, "", refusal="invalid") for i, c in enumerate(cands)]
    pool.update(told(proposals, {}, {}))
    assert seen == [[c.candidate_id for c in cands[1:]]]
    lookalike = Feedback("pool:one/pool-00000", 1.0, True)  # no part: the run's designer's
    mixed = MixedDesigner(MutationDesigner(seed=1), [SourcePart("pool:one", _pool(), 0.5)], 0.5)
    mixed.main.designer.update = lambda feedback: seen.append([f.candidate_id for f in feedback])  # type: ignore[attr-defined]
    mixed.update([lookalike])
    assert seen[-1] == ["pool:one/pool-00000"]


def test_shares_default_to_equal_and_a_round_cannot_be_overbooked() -> None:
    assert shares([SourceConfig(source="a")]) == (0.5, [0.5])
    main, parts = shares([SourceConfig(source="a", share=0.4), SourceConfig(source="b")])
    assert main == pytest.approx(0.3) and parts == [0.4, pytest.approx(0.3)]
    with pytest.raises(UserError, match="shares add up to 1.2"):
        load_config(overrides={"sources": [{"source": "a", "share": 0.6}, {"source": "b", "share": 0.6}]})


def _task_family():
    pytest.importorskip("reasoning_gym", reason="the reasoning-gym extra is not installed")
    from spadegym.families.imported import TaskFamily

    return TaskFamily(TASK, instances=4)


def test_an_outgrown_reasoning_gym_level_gets_a_harder_child_as_a_family_level_does() -> None:
    family = _task_family()
    designer = MutationDesigner(seed=2, families=[family])
    [first] = asyncio.run(designer.propose(DesignContext(skill=MATH, count=1)))
    assert first.family == f"reasoning-gym:{TASK}" and first.lineage.operator == "new"
    assert {k: v for k, v in first.knobs.items() if k != "variant"} == {k: v[0] for k, v in family.own_knobs.items()}
    assert f"DIFFICULTY = {first.knobs!r}" in first.source
    mastered = LevelSummary("rg-0", MATH, win_rate=1.0, win_rate_hint=1.0, regret=0.0, score=0.5, family=first.family,
                            knobs=first.knobs, source=first.source)
    [child] = asyncio.run(designer.propose(DesignContext(skill=MATH, count=1, parents=[mastered])))
    assert child.lineage.operator == "harder" and child.lineage.parents == ["rg-0"] and child.lineage.depth == 1
    # Every curriculum attribute one step up, as for a family level the agent outgrew; the same instances' seed.
    assert child.knobs == {**{k: levels[1] for k, levels in family.own_knobs.items()}, "variant": first.knobs["variant"]}
    assert f"DIFFICULTY = {child.knobs!r}" in child.source


def test_each_part_learns_only_from_its_own_candidates() -> None:
    family = _task_family()
    main, rg = MutationDesigner(seed=0), MutationDesigner(seed=1, families=[family])
    mixed = MixedDesigner(main, [SourcePart(family.name, rg, 0.5, frozenset({MATH}))], 0.5)
    cands = asyncio.run(mixed.propose(DesignContext(skill=MATH, count=4)))
    ours = [c for c in cands if c.part == family.name]
    assert len(ours) == 2 and all(c.candidate_id.startswith(f"{family.name}/mut-") for c in ours)
    mixed.update([Feedback(c.candidate_id, 1.0 if c in ours else -1.0, True, c.lineage.operator, part=c.part)
                  for c in cands])
    assert sum(rg.stats["global"].uses.values()) == 2 and rg.stats["global"].baseline > 0
    assert sum(main.stats["global"].uses.values()) == 2 and main.stats["global"].baseline < 0
    again = MixedDesigner(MutationDesigner(seed=0), [SourcePart(family.name, MutationDesigner(seed=1, families=[family]),
                                                                0.5, frozenset({MATH}))], 0.5)
    again.load_state_dict(mixed.state_dict())
    assert again.state_dict() == mixed.state_dict()


def test_a_run_draws_built_in_reasoning_gym_and_pool_levels_in_one_curriculum(tmp_path: Path) -> None:
    pytest.importorskip("reasoning_gym", reason="the reasoning-gym extra is not installed")
    config = RunConfig(rounds=2, agent="random", envs_per_round=6, plays=2, hint_plays=2, group_size=2,
                       skills=[MATH, "Logical Deduction"], skills_per_round=2, tensorboard=False,
                       heldout={"every": 0, "levels": "easiest", "seeds": 1, "families": ["take_away"]},
                       sources=[{"source": f"reasoning-gym:{TASK}", "instances": 4, "share": 0.4},
                                {"source": str(ENVS), "share": 0.2}])
    run(config, tmp_path / "run", console=Console(file=open(os.devnull, "w")), report=False)  # noqa: SIM115
    with RunStore.open(tmp_path / "run") as store:
        buffer = store.load_state("buffer")["levels"]
        envs = {row["env_id"]: row for row in store.environments(valid_only=True)}
        played = {e["env_id"] for e in store.episodes(split="train")}
    sources = {envs[e]["meta"]["source"] for e in buffer}
    assert sources == {"mutation", f"reasoning-gym:{TASK}", f"pool:{ENVS.name}"}
    rg = [envs[e] for e in buffer if envs[e]["family"] == f"reasoning-gym:{TASK}"]
    assert rg and all(set(r["knobs"]) == {"num_terms", "num_digits", "variant"} for r in rg)
    assert set(buffer) <= played  # every level in the buffer was played and scored
    built_in = [e for e in buffer if envs[e]["meta"]["source"] == "mutation"]
    assert built_in and all(not envs[e]["family"].startswith("reasoning-gym") for e in built_in)


def test_the_learner_cannot_play_a_source_whose_levels_list_no_actions(tmp_path: Path) -> None:
    pytest.importorskip("reasoning_gym", reason="the reasoning-gym extra is not installed")
    config = RunConfig(rounds=1, sources=[{"source": f"reasoning-gym:{TASK}"}], tensorboard=False)
    with pytest.raises(UserError, match="list none; play them with a text agent"):
        run(config, tmp_path / "run", report=False)


SOLVER = '''
import re

from spadegym.agents.random_agent import RandomAgent
from spadegym.rollout.agent import Reply

EXPRESSION = re.compile(r"Calculate ([-+*/() 0-9]+)\\.")


class ArithmeticSolver(RandomAgent):
    """Solves reasoning-gym's basic_arithmetic (floor division, as its generator); plays the rest at random."""

    async def act(self, views):
        replies = await super().act(views)
        for i, view in enumerate(views):
            found = EXPRESSION.search(view.observation)
            if found:
                answer = str(eval(found.group(1).replace("/", "//")))  # digits, operators and brackets only
                replies[i] = Reply(text=f"\\\\boxed{{{answer}}}", action=answer)
        return replies
'''


def test_a_reasoning_gym_source_climbs_its_knobs_as_the_agent_outgrows_its_levels(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    pytest.importorskip("reasoning_gym", reason="the reasoning-gym extra is not installed")
    (tmp_path / "solvers").mkdir()
    (tmp_path / "solvers" / "arithmetic.py").write_text(SOLVER)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = RunConfig(rounds=3, agent="solvers.arithmetic:ArithmeticSolver", envs_per_round=4, plays=2,
                       hint_plays=0, group_size=2, skills=[MATH], skills_per_round=1, tensorboard=False,
                       buffer={"replay_fraction": 0.0},  # every level of a round is new: two of them the task's
                       heldout={"every": 0, "levels": "easiest", "seeds": 1, "families": ["take_away"]},
                       sources=[{"source": f"reasoning-gym:{TASK}", "instances": 4, "share": 0.5}])
    run(config, tmp_path / "run", console=Console(file=open(os.devnull, "w")), report=False)  # noqa: SIM115
    with RunStore.open(tmp_path / "run") as store:
        rg = [row for row in store.environments() if row["meta"]["source"] == f"reasoning-gym:{TASK}"]
        wins = {e: store.scores(env_id=e) for e in (row["env_id"] for row in rg)}
    from spadegym.families import difficulty_index

    assert all(score["win_rate"] == 1.0 for scores in wins.values() for score in scores)  # the agent outgrows each
    hardest = {n: max(difficulty_index(r["family"], r["knobs"]) for r in rg if r["round"] == n) for n in (0, 1, 2)}
    assert hardest[0] == 0.0 < hardest[1] < hardest[2]  # one step up every round, as a family's levels climb
    assert {r["lineage"]["operator"] for r in rg if r["round"] > 0} == {"harder"}


def test_a_run_with_a_reasoning_gym_source_preloads_it_into_the_sandbox_and_one_without_does_not() -> None:
    from spadegym.loop import RunConfig

    assert RunConfig(sources=[{"source": "reasoning-gym:chain_sum"}]).sandbox.preload == ["reasoning_gym"]
    assert RunConfig().sandbox.preload == []


def test_outside_the_designers_no_module_reads_a_candidates_notes() -> None:
    """The loop, the red team and the store read a candidate's typed fields (``part``, ``pool_file``, its level's
    params); ``Candidate.notes`` holds a designer's own notes, read by designers alone (the store writes them
    whole, through ``Candidate.stored_meta``)."""
    import ast

    package = Path(__file__).parents[2] / "spadegym"
    found = [f"{path.relative_to(package)}:{node.lineno}" for path in sorted(package.rglob("*.py"))
             if path.parent.name != "designers"
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Attribute) and node.attr in ("notes", "meta")]
    assert not found, f"Candidate.notes read outside the designers: {found}"
