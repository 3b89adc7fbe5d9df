"""The search's own parts: the space both arms draw from, variations in clusters and shrinking, open levels."""

from __future__ import annotations

import asyncio
import random

from spadegym.designers.base import DesignContext
from spadegym.families import get_family
from spadegym.families.edits import edit_space
from spadegym.redteam.clusters import ClusterMemory, cluster_key, dominates
from spadegym.redteam.minimise import shrink_level
from spadegym.redteam.predict import Judging, PlayModel
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
        async def judge(source: str, hint: str | None, params: object = None) -> tuple[Probe, bool]:
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



def test_shrinking_keeps_above_a_won_level_rather_than_refinding_the_known_failure_below_it() -> None:
    # The target fails the easiest maze, wins it with more turns, and fails that again once it is bigger: a
    # failure of its own, above the won level. Shrinking the big maze with extra turns must not walk back
    # down to the easiest maze (a repeat of the failure known), nor play any level that would repeat it.
    memory = ClusterMemory()
    memory.add(cluster_key("grid_maze", EASIEST, "", "lost"), "grid_maze", EASIEST)
    memory.add_pass("grid_maze", {**EASIEST, "extra_turns": 4})
    big = MAZE.ladder("size")[2]
    start = {**EASIEST, "size": MAZE.ladder("size")[-1], "extra_turns": 4}
    played: list[dict] = []

    async def judge(source: str, hint: str | None, params: object = None) -> tuple[Probe, bool]:
        knobs = eval(source.split("DIFFICULTY = ")[1].splitlines()[0])
        played.append(knobs)
        return Probe(source, True, {}), knobs["extra_turns"] == 0 or knobs["size"] >= big

    explained = lambda knobs: memory.known_cluster("grid_maze", knobs)  # noqa: E731
    kept = asyncio.run(shrink_level("grid_maze", start, Probe(MAZE.render(start), True, {}), judge, explained))
    assert kept.knobs == {**EASIEST, "size": big, "extra_turns": 4, "variant": start["variant"]}
    assert not any(explained(k) for k in played)
    assert any(step.get("explained_by") for step in kept.steps)
    # Without the memory, the same shrink walks down to the failure already known.
    again = asyncio.run(shrink_level("grid_maze", start, Probe(MAZE.render(start), True, {}), judge))
    assert again.knobs == {**EASIEST, "variant": start["variant"]}

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



def test_a_win_of_the_failures_own_game_refutes_nothing_above_it_and_a_win_above_it_does() -> None:
    memory = ClusterMemory()
    key = cluster_key("grid_maze", EASIEST, "", "lost")
    memory.add(key, "grid_maze", EASIEST)
    harder = {**EASIEST, "size": MAZE.ladder("size")[-1]}
    memory.add_pass("grid_maze", {**EASIEST, "variant": 3})  # its own game on other instances, won by luck
    assert memory.known_cluster("grid_maze", harder) == key and not memory.won_between("grid_maze", harder)
    between = {**EASIEST, "size": MAZE.ladder("size")[2]}
    memory.add_pass("grid_maze", between)
    assert memory.known_cluster("grid_maze", harder) is None and memory.won_between("grid_maze", harder) == [between]
    memory.forget_pass("grid_maze", between)
    assert memory.known_cluster("grid_maze", harder) == key

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


def test_the_search_spends_a_skills_slots_on_the_family_whose_proposals_find_failures() -> None:
    from spadegym.designers.base import Feedback

    designer = SearchDesigner(SearchSpace("full", ["grid_maze", "key_rooms"]), ClusterMemory(), seed=0)
    families = []
    for n in range(12):
        cands = asyncio.run(designer.propose(DesignContext(skill="Spatial Reasoning", count=4, round=n)))
        families += [c.family for c in cands]
        designer.update([Feedback(c.candidate_id, 0.0, True, details={"found": float(c.family == "key_rooms")})
                         for c in cands])
    late = families[len(families) // 2:]
    assert late.count("key_rooms") >= 3 * late.count("grid_maze") and "grid_maze" in families
    restored = SearchDesigner(SearchSpace("full", ["grid_maze", "key_rooms"]), ClusterMemory(), seed=0)
    restored.load_state_dict(designer.state_dict())
    assert restored.family_yield.state() == designer.family_yield.state()


def test_the_search_expects_a_level_lost_where_the_targets_plays_of_its_family_were_lost() -> None:
    designer = SearchDesigner(SearchSpace("full", ["grid_maze"]), ClusterMemory(), seed=0)
    small = {**EASIEST, "size": MAZE.ladder("size")[1]}
    big = {**EASIEST, "size": MAZE.ladder("size")[-1], "walls": MAZE.ladder("walls")[-1]}
    assert designer.likely_lost(MAZE, small) == designer.likely_lost(MAZE, big) == 1.0  # nothing played yet
    # The target won the small mazes it played and lost the big ones, in plays of any origin.
    for size in MAZE.ladder("size")[:2]:
        designer.model.observe("grid_maze", {**EASIEST, "size": size}, wins=4, plays=4)
    for size in MAZE.ladder("size")[-2:]:
        designer.model.observe("grid_maze", {**EASIEST, "size": size, "walls": MAZE.ladder("walls")[-1]}, 0, 12)
    assert designer.likely_lost(MAZE, small) < 0.5 < designer.likely_lost(MAZE, big)
    assert designer.likely_lost(get_family("key_rooms"), get_family("key_rooms").level_knobs(0)) == 1.0  # its own


def test_a_level_the_target_wins_half_the_time_is_seldom_expected_to_fail_for_good() -> None:
    # Failing 2 of 4 hunt plays is likely at a win chance of one half; its replays then confirm the failure
    # (7 losses of 12 fresh plays: the lower end of the 95% interval reaches 0.3) less than half the time.
    judging = Judging()
    assert judging.fewest_confirming_losses() == 7
    assert Judging(confirm_plays=4, min_failure_rate=0.9).fewest_confirming_losses() == 5  # never: no case
    model = PlayModel()
    coin = {**EASIEST, "size": MAZE.ladder("size")[1]}
    hopeless = {**EASIEST, "size": MAZE.ladder("size")[-1], "walls": MAZE.ladder("walls")[-1]}
    for size in MAZE.ladder("size")[:3]:
        model.observe("grid_maze", {**EASIEST, "size": size}, wins=6, plays=12)
    for size in MAZE.ladder("size")[-2:]:
        model.observe("grid_maze", {**EASIEST, "size": size, "walls": MAZE.ladder("walls")[-1]}, wins=0, plays=12)
    lost, kept = model.lost_chance("grid_maze", coin, 4, 0.5), model.kept_chance("grid_maze", coin, judging)
    assert lost is not None and kept is not None and kept < 0.6 * lost and lost > 0.5
    assert model.kept_chance("grid_maze", hopeless, judging) > 0.9
    designer = SearchDesigner(SearchSpace("full", ["grid_maze"]), ClusterMemory(), seed=0, model=model)
    assert designer.likely_lost(MAZE, coin) == kept
