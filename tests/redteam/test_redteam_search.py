"""The search's own parts: the space both arms draw from, variations in clusters and shrinking, open levels."""

from __future__ import annotations

import asyncio
import random

from spadegym.designers.base import DesignContext
from spadegym.families import get_family
from spadegym.families.edits import edit_space
from spadegym.redteam.clusters import ClusterMemory, cluster_key, dominates
from spadegym.redteam.minimise import shrink_level
from spadegym.redteam.probe import Probe
from spadegym.redteam.search import SearchDesigner
from spadegym.redteam.space import SearchSpace, UniformDesigner, level_key

MAZE = get_family("grid_maze")
EASIEST = MAZE.level_knobs(0)


def test_a_cluster_names_the_variations_a_failure_needs_and_not_those_the_target_never_sees() -> None:
    worded = cluster_key("grid_maze", {**EASIEST, "verbs": 3, "step_cost": 0.05, "variant": 2}, "", "lost")
    assert "verbs=3" in worded and "step_cost" not in worded and "variant" not in worded
    assert "layout" not in worded  # a dimension at its default is the family as listed
    assert worded != cluster_key("grid_maze", EASIEST, "", "lost")
    harder = {**EASIEST, "size": MAZE.ladder("size")[-1]}
    assert dominates("grid_maze", {**harder, "verbs": 3, "layout": "pipe"}, {**EASIEST, "verbs": 3})
    assert not dominates("grid_maze", {**harder, "verbs": 2}, {**EASIEST, "verbs": 3})  # another wording
    assert dominates("grid_maze", {**harder, "verbs": 2}, EASIEST)


def test_shrinking_lowers_the_knobs_first_and_keeps_the_variation_a_failure_needs() -> None:
    start = {**MAZE.level_knobs(MAZE.max_level + 1), "verbs": 3, "layout": "pipe", "menu": "sorted"}

    def run(fails) -> dict:
        async def judge(source: str, hint: str | None) -> tuple[Probe, bool]:
            knobs = eval(source.split("DIFFICULTY = ")[1].splitlines()[0])  # the rendered file's own knobs
            return Probe(source, True, {}), fails(knobs)

        return asyncio.run(shrink_level("grid_maze", start, Probe(MAZE.render(start), True, {}), judge)).knobs

    # The target cannot read the held-out action names: the easiest maze fails with them, and only with them.
    kept = run(lambda k: k["verbs"] == 3)
    assert kept == {**EASIEST, "verbs": 3, "variant": start["variant"]}
    # A failure that needs no variation loses them all, down to the size where it starts.
    big = MAZE.ladder("size")[2]
    plain = run(lambda k: k["size"] >= big)
    assert plain == {**EASIEST, "size": big, "variant": start["variant"]}


def test_the_uniform_baseline_draws_the_whole_space_or_the_listed_one() -> None:
    space = edit_space("grid_maze")
    for kind, sees_more in (("full", True), ("listed", False)):
        designer = UniformDesigner(SearchSpace(kind, ["grid_maze"]), seed=3)
        cands = asyncio.run(designer.propose(DesignContext(skill="Spatial Reasoning", count=120)))
        extended = any(c.knobs[k] not in s.listed for c in cands for k, s in space.knobs.items())
        held_out = any(c.knobs[k] in d.held_out for c in cands for k, d in space.dimensions.items())
        varied = any(c.knobs["layout"] != "colon" for c in cands)
        assert (extended, held_out, varied) == (sees_more, sees_more, sees_more)
        assert all(c.family == "grid_maze" and c.source == MAZE.render(c.knobs) for c in cands)


def _open_for(memory: ClusterMemory, knobs: dict) -> bool:
    return memory.known_cluster("grid_maze", knobs) is None and not memory.passed_above("grid_maze", knobs)


def test_the_search_proposes_only_levels_whose_outcome_the_memory_cannot_tell() -> None:
    memory = ClusterMemory()
    failed = {**EASIEST, "size": MAZE.ladder("size")[1], "walls": MAZE.ladder("walls")[1]}
    memory.add(cluster_key("grid_maze", failed, "", "lost"), "grid_maze", failed)
    won = {**EASIEST, "size": MAZE.ladder("size")[1]}
    memory.add_pass("grid_maze", won)
    designer = SearchDesigner(SearchSpace("full", ["grid_maze"]), memory, seed=0)
    cands = []
    for n in range(8):
        cands += asyncio.run(designer.propose(DesignContext(skill="Spatial Reasoning", count=5, round=n)))
    assert len(cands) == 40
    assert all(_open_for(memory, c.knobs) for c in cands)
    assert len({level_key("grid_maze", c.knobs) for c in cands}) == len(cands)  # never the same game twice
    edges = [c for c in cands if c.lineage.operator == "edge"]
    # An edge is one change above the won level: a knob a step up, or one dimension the target sees changed.
    assert edges and all(sum(c.knobs[k] != v for k, v in MAZE.check_knobs(won).items()
                             if k not in ("variant", "step_cost", "reward_shaping")) == 1 for c in edges)
    # Five levels of one round: none at or above another (whatever the first shows, the rest still tell).
    first = cands[:5]
    assert not any(dominates("grid_maze", a.knobs, b.knobs) for a in first for b in first if a is not b)


def test_a_skill_whose_families_fail_their_easiest_game_has_nothing_left_to_propose() -> None:
    memory = ClusterMemory()
    families = ["grid_maze", "key_rooms"]
    for name in families:
        easiest = get_family(name).level_knobs(0)
        memory.add(cluster_key(name, easiest, "", "lost"), name, easiest)
    designer = SearchDesigner(SearchSpace("full", families), memory, seed=0)
    assert asyncio.run(designer.propose(DesignContext(skill="Spatial Reasoning", count=3))) == []
    rng = random.Random(0)
    assert all(memory.known_cluster(n, SearchSpace("full").draw(rng, get_family(n))) for n in families for _ in range(20))
