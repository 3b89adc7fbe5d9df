"""The mutation designer end to end: real families, real sandbox, real validation gate."""

from __future__ import annotations

import asyncio
import json

from spadegym.designers import make_designer
from spadegym.designers.base import Candidate, DesignContext, Designer, Feedback, LevelSummary
from spadegym.designers.mutation import OPERATORS, MutationDesigner, OperatorStats
from spadegym.families import FREE_KNOBS, get_family
from spadegym.families.variation import dimension, in_training_slice
from spadegym.sandbox import Sandbox
from spadegym.validate import validate_source

SKILL = "Spatial Reasoning"


def _as_parents(cands: list[Candidate], scores: list[float] | None = None) -> list[LevelSummary]:
    scores = scores or [0.5] * len(cands)
    return [LevelSummary(f"env-{c.candidate_id}", c.skill, 0.5, 0.8, 0.3, s, family=c.family, knobs=c.knobs,
                         source=c.source, depth=c.lineage.depth) for c, s in zip(cands, scores)]


def _key(c: Candidate) -> str:
    return json.dumps([c.family, c.knobs], sort_keys=True)


def test_fresh_proposals_are_new_levels_of_the_skill_unique_and_valid(sandbox: Sandbox) -> None:
    designer = MutationDesigner(seed=3)
    assert isinstance(designer, Designer)
    cands = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=6)))
    assert len(cands) == 6
    assert len({c.candidate_id for c in cands}) == 6 and len({_key(c) for c in cands}) == 6
    for c in cands:
        assert c.skill == SKILL and get_family(c.family).skill == SKILL and c.hint is None
        assert c.lineage.operator == "new" and c.lineage.depth == 0 and c.lineage.parents == []
        assert c.lineage.designer.startswith("mutation") and in_training_slice(c.knobs)
        verdict = validate_source(c.source, f"{c.candidate_id}.py", sandbox=sandbox)
        assert verdict.valid, verdict.feedback()


def test_mutations_record_lineage_and_change_the_knobs_they_name(sandbox: Sandbox) -> None:
    designer = MutationDesigner(seed=5)
    first = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=3)))
    parents = _as_parents(first, [0.9, 0.1, 0.0])
    children = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=8, parents=parents)))
    by_id = {p.env_id: p for p in parents}
    mutated = [c for c in children if c.lineage.operator != "new"]
    assert mutated, "with parents, most proposals are edits"
    for c in mutated:
        parent = by_id[c.lineage.parents[0]]
        assert c.lineage.depth == 1 and c.family == parent.family
        changed = {k for k in c.knobs if c.knobs[k] != parent.knobs[k]}
        assert changed == set(c.notes.edit) and c.notes.before == {k: parent.knobs[k] for k in changed}
        family = get_family(c.family)
        steps = {k: family.level_index(c.knobs)[k] - family.level_index(parent.knobs)[k] for k in changed}
        if c.lineage.operator == "harder":
            assert all(d > 0 for d in steps.values()) and changed <= set(family.ladders)
            # A level above the band (0.9 wins) moves every difficulty knob; others move one.
            assert len(changed) > 1 if parent.win_rate > 0.6 else len(changed) == 1
        elif c.lineage.operator == "easier":
            assert len(changed) == 1 and all(d < 0 for d in steps.values())
        elif c.lineage.operator == "vary":  # one variation dimension, to a training choice
            (name,) = changed
            assert name in FREE_KNOBS and c.knobs[name] in dimension(name).training
        else:  # each knob from one of the two parents
            assert c.lineage.operator == "crossover" and len(c.lineage.parents) == 2
            mate = by_id[c.lineage.parents[1]]
            assert all(c.knobs[k] == mate.knobs[k] for k in changed)
    # No proposal repeats a parent or another proposal of the batch.
    keys = [_key(c) for c in children]
    assert len(set(keys)) == len(keys)
    assert not set(keys) & {json.dumps([p.family, p.knobs], sort_keys=True) for p in parents}
    # A grandchild is one level deeper.
    child = mutated[0]
    grand = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=4, parents=_as_parents([child]))))
    assert any(g.lineage.depth == 2 and g.lineage.parents == [f"env-{child.candidate_id}"] for g in grand)
    for c in children[:3]:
        assert validate_source(c.source, "child.py", sandbox=sandbox).valid


def test_operator_policy_moves_toward_rewarded_operators() -> None:
    designer = MutationDesigner(seed=1)
    parents = _as_parents(asyncio.run(designer.propose(DesignContext(skill=SKILL, count=4))))
    before = designer.operator_probabilities(SKILL)
    for _ in range(6):
        cands = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=8, parents=parents)))
        designer.update([Feedback(c.candidate_id, 1.0 if c.lineage.operator == "harder" else -0.5, True,
                                  c.lineage.operator) for c in cands])
    after = designer.operator_probabilities(SKILL)
    assert after["harder"] > before["harder"] + 0.2
    assert after["harder"] == max(after.values())
    assert min(after.values()) >= designer.config.exploration / len(OPERATORS) - 1e-9  # exploration floor
    stats = designer.state_dict()["stats"]["global"]
    assert stats["uses"]["harder"] > 0 and stats["reward_sum"]["harder"] > 0


def test_same_seed_same_proposals_and_state_round_trip() -> None:
    def run(d: MutationDesigner) -> list[tuple[str, str]]:
        first = asyncio.run(d.propose(DesignContext(skill="Optimization", count=4)))
        d.update([Feedback(c.candidate_id, 0.3 * i, True, c.lineage.operator) for i, c in enumerate(first)])
        second = asyncio.run(d.propose(DesignContext(skill="Optimization", count=5, parents=_as_parents(first))))
        return [(c.candidate_id, _key(c)) for c in first + second]

    a, b = MutationDesigner(seed=42), MutationDesigner(seed=42)
    assert run(a) == run(b)
    assert run(MutationDesigner(seed=43)) != run(MutationDesigner(seed=42))

    state = json.loads(json.dumps(a.state_dict()))  # plain JSON
    resumed = MutationDesigner(seed=0)
    resumed.load_state_dict(state)
    assert run(resumed) == run(a)
    assert resumed.operator_probabilities() == a.operator_probabilities()


def test_registry_builds_it_and_per_skill_scopes_keep_apart() -> None:
    designer = make_designer("mutation", seed=7)
    assert isinstance(designer, MutationDesigner) and designer.name == "mutation"
    scoped = MutationDesigner(seed=7, config={"per_skill": True})
    cands = asyncio.run(scoped.propose(DesignContext(skill="Causal Inference", count=4)))
    scoped.update([Feedback(c.candidate_id, 1.0, True, c.lineage.operator) for c in cands])
    assert scoped.operator_probabilities("Causal Inference")["new"] > scoped.operator_probabilities(SKILL)["new"]


def test_proposals_spread_over_the_skill_families_even_with_one_strong_parent() -> None:
    from spadegym.families import list_families

    designer = MutationDesigner(seed=5)
    names = {f.name for f in list_families(SKILL)}
    first = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=len(names))))
    assert {c.family for c in first} == names  # one level of each family first
    best = [c for c in first][:1]
    parents = _as_parents(best, [1.0])  # one family holds the only (and best) parent
    later = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=3 * len(names), parents=parents)))
    counts = {n: sum(c.family == n for c in later) for n in names}
    assert max(counts.values()) - min(counts.values()) <= 1, counts
    unbalanced = MutationDesigner(seed=5, config={"balance_families": False})
    asyncio.run(unbalanced.propose(DesignContext(skill=SKILL, count=len(names))))
    skewed = asyncio.run(unbalanced.propose(DesignContext(skill=SKILL, count=3 * len(names), parents=parents)))
    assert max(sum(c.family == n for c in skewed) for n in names) > max(counts.values())


def test_edits_follow_the_parent_win_rate() -> None:
    from spadegym.loop.heldout import difficulty_index

    family = get_family("grid_maze")
    knobs = family.level_knobs(1)
    middle = difficulty_index("grid_maze", knobs)

    def children(win_rate: float, directed: bool = True) -> list[float]:
        designer = MutationDesigner(seed=11, config={"directed": directed, "exploration": 0.0})
        designer.stats["global"] = OperatorStats(preferences={o: (-9.0 if o == "new" else 0.0) for o in OPERATORS})
        parent = LevelSummary("p", family.skill, win_rate, 1.0, 0.0, 1.0, family="grid_maze", knobs=knobs,
                              source=family.render(knobs))
        cands = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=24, parents=[parent] * 3)))
        return [difficulty_index(c.family, c.knobs) for c in cands if c.family == "grid_maze"
                and c.lineage.operator in ("harder", "easier")]

    outgrown, hopeless, frontier = children(0.95), children(0.05), children(0.5)
    assert outgrown and min(outgrown) >= middle and max(outgrown) > middle
    assert hopeless and max(hopeless) <= middle and min(hopeless) < middle
    assert min(frontier) < middle < max(frontier)  # inside the band: both ways
    assert min(children(0.95, directed=False)) < middle  # undirected edits also go down


def test_a_level_too_hard_gets_no_same_difficulty_edits_and_no_held_out_choice() -> None:
    from spadegym.designers.mutation import _edits
    from spadegym.families import edit_space

    space = edit_space("grid_maze")
    knobs = get_family("grid_maze").level_knobs(1)
    assert _edits(space, knobs, 0)["vary"] and _edits(space, knobs, 1)["vary"]  # in or above the band: worth a try
    assert not _edits(space, knobs, -1)["vary"]
    varied = [{**knobs, **patch} for patch in _edits(space, knobs, 0)["vary"]]
    assert all(in_training_slice(k) for k in varied)
    assert {"phrasing", "layout", "verbs", "menu", "start"} <= {k for patch in _edits(space, knobs, 0)["vary"] for k in patch}


def test_a_family_with_every_fresh_level_taken_yields_its_slot_to_another() -> None:
    from spadegym.families import list_families

    family = get_family("grid_maze")
    others = [f.name for f in list_families(SKILL) if f.name != family.name]
    designer = MutationDesigner(seed=2)  # by default fresh levels differ only in their variant
    designer.proposed = {**dict.fromkeys(others, 5), family.name: 0}  # grid_maze is the least proposed
    taken = [LevelSummary(f"t{v}", SKILL, 1.0, 1.0, 0.0, 0.0, family=family.name,
                          knobs={**family.level_knobs(0), "variant": v}) for v in family.knobs["variant"]]
    cands = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=2, mastered=taken)))
    assert len(cands) == 2  # before: the slot came back empty after 50 draws of taken levels
    assert all(c.family in others for c in cands)


def test_a_family_the_agent_has_outgrown_gets_the_slot_and_a_harder_level() -> None:
    from spadegym.loop.heldout import difficulty_index

    def summary(name: str, family: str, win_rate: float, score: float) -> LevelSummary:
        knobs = get_family(family).level_knobs(0)
        return LevelSummary(name, SKILL, win_rate, 1.0, 0.0, score, family=family, knobs=knobs)

    parents = [summary("maze", "grid_maze", 0.5, 0.9), summary("rooms", "key_rooms", 0.4, 0.8),
               summary("sonar", "sonar_dig", 0.95, 0.1)]  # sonar_dig: mastered, nothing in the band
    for seed in range(5):
        designer = MutationDesigner(seed=seed)
        designer.proposed = {"grid_maze": 0, "key_rooms": 0, "sonar_dig": 9}  # not the least proposed
        (cand,) = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=1, parents=parents)))
        assert cand.family == "sonar_dig" and cand.lineage.parents == ["sonar"]
        assert difficulty_index("sonar_dig", cand.knobs) > 0


def test_a_retired_level_in_the_band_makes_its_family_climb() -> None:
    from spadegym.loop.heldout import difficulty_index

    knobs = get_family("sonar_dig").level_knobs(0)
    stalled = LevelSummary("sonar", SKILL, 0.45, 1.0, 0.5, 0.9, family="sonar_dig", knobs=knobs, retired=True)
    others = [LevelSummary(n, SKILL, 0.5, 1.0, 0.5, 0.9, family=f, knobs=get_family(f).level_knobs(0))
              for n, f in (("maze", "grid_maze"), ("rooms", "key_rooms"))]
    for seed in range(5):
        designer = MutationDesigner(seed=seed)
        designer.proposed = {"grid_maze": 0, "key_rooms": 0, "sonar_dig": 9}
        (cand,) = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=1, parents=[stalled, *others])))
        assert cand.family == "sonar_dig" and cand.lineage.operator == "harder"
        assert difficulty_index("sonar_dig", cand.knobs) > 0
    hard = LevelSummary("sonar", SKILL, 0.05, 0.9, 0.85, 0.1, family="sonar_dig", knobs=knobs, retired=True)
    assert MutationDesigner()._direction(hard) == -1  # retired but too hard: still only easier


def _gaps(designer: MutationDesigner, count: int) -> list[float]:
    """The distance of each fresh level to the nearest one proposed before it."""
    from spadegym.designers.mutation import _position

    family = get_family("take_away")
    points, gaps = [], []
    for _ in range(count):
        (cand,) = asyncio.run(designer.propose(DesignContext(skill="Mathematical Reasoning", count=1)))
        point = _position(family, cand.knobs)
        if points:
            gaps.append(min(sum(abs(a - b) for a, b in zip(point, p)) for p in points) / len(point))
        points.append(point)
    return gaps


def test_novelty_draws_spread_fresh_levels_away_from_the_levels_already_proposed() -> None:
    config = {"fresh_uniform": True, "families": ["take_away"]}
    plain = MutationDesigner(seed=5, config=config)
    novel = MutationDesigner(seed=5, config={**config, "novelty_draws": 16})
    novel_gaps, plain_gaps = _gaps(novel, 16), _gaps(plain, 16)
    assert min(novel_gaps) > 0  # no difficulty tried twice, while fresh levels are left
    assert sum(novel_gaps) > 1.2 * sum(plain_gaps)
    first = get_family("take_away").check_knobs(asyncio.run(
        MutationDesigner(seed=5, config={**config, "novelty_draws": 16}).propose(
            DesignContext(skill="Mathematical Reasoning", count=1)))[0].knobs)
    assert novel.novelty(get_family("take_away"), first) == 0.0  # proposed before: nothing new about it
    again = MutationDesigner(seed=0, config={**config, "novelty_draws": 16})
    again.load_state_dict(json.loads(json.dumps(novel.state_dict())))
    assert again.visited == novel.visited and len(again.visited["take_away"]) == 16


def test_with_a_minimum_novelty_no_difficulty_is_proposed_twice_and_an_exhausted_family_proposes_nothing() -> None:
    family = get_family("knapsack")  # 3 item counts x 2 value goals x 2 reward shapings: 12 difficulties
    designer = MutationDesigner(seed=2, config={"fresh_uniform": True, "families": ["knapsack"], "min_novelty": 0.01,
                                                "novelty_draws": 4})
    context = DesignContext(skill=family.skill, count=8)
    first, second = asyncio.run(designer.propose(context)), asyncio.run(designer.propose(context))
    signatures = {json.dumps({k: v for k, v in family.check_knobs(c.knobs).items() if k != "variant"}, sort_keys=True)
                  for c in first + second}
    assert len(first) == 8 and len(second) == 4 and len(signatures) == 12
    assert asyncio.run(designer.propose(context)) == []


def test_a_climbing_search_only_makes_its_parents_harder() -> None:
    from spadegym.families import FREE_KNOBS

    family = get_family("motif_fill")
    knobs = {**family.level_knobs(1), "variant": 0}
    start = family.level_index(knobs)
    designer = MutationDesigner(seed=3, config={"climb": True, "exploration": 0.0, "min_novelty": 0.01})
    designer.stats["global"] = OperatorStats(preferences={o: (-9.0 if o == "new" else 0.0) for o in OPERATORS})
    parent = LevelSummary("p", family.skill, 0.75, 1.0, 0.0, 0.25, family="motif_fill", knobs=knobs,
                          source=family.render(knobs))
    cands = asyncio.run(designer.propose(DesignContext(skill=family.skill, count=8, parents=[parent])))
    edits = [c for c in cands if c.lineage.operator != "new"]
    assert edits and all(c.lineage.operator == "harder" for c in edits)
    raised = [{k for k, v in family.level_index(c.knobs).items() if k not in FREE_KNOBS and v != start[k]}
              for c in edits]
    assert all(all(family.level_index(c.knobs)[k] > start[k] for k in r) for c, r in zip(edits, raised))
    assert {len(r) for r in raised} == {1, 2}  # one knob up, or two at once


def test_vary_fresh_is_the_share_of_fresh_draws_that_take_a_random_variation() -> None:
    from spadegym.families.variation import DIMENSIONS

    surface = {d.name for d in DIMENSIONS} - {"variant"}

    def varied(share: float) -> list[bool]:
        designer = MutationDesigner(seed=1, config={"vary_fresh": share})
        out = []
        for skill in ("Spatial Reasoning", "Optimization", "Pattern Recognition"):
            for c in asyncio.run(designer.propose(DesignContext(skill=skill, count=12))):
                family = get_family(c.family)
                listed, knobs = family.check_knobs(family.level_knobs(0)), family.check_knobs(c.knobs)
                out.append(any(knobs[k] != listed[k] for k in surface if k in knobs))
        return out

    assert not any(varied(0.0))
    assert sum(varied(1.0)) >= 33  # of 36: a random draw can land on the listed choice of every dimension
    half = varied(0.5)
    assert 8 <= sum(half) <= 28
    assert MutationDesigner(seed=1, config={"vary_fresh": True}).config.vary_fresh == 1.0  # true = every draw


def test_a_fresh_draw_of_a_game_the_pool_holds_is_one_variation_of_it() -> None:
    from spadegym.families.variation import DIMENSIONS

    surface = {d.name for d in DIMENSIONS} - {"variant"}

    def games(distinct: bool) -> list[tuple[str, dict]]:
        designer = MutationDesigner(seed=4, config={"distinct_games": distinct})
        first = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=3)))  # one game per family
        later = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=9, parents=[], mastered=_as_parents(first))))
        out = []
        for c in [*first, *later]:
            family = get_family(c.family)
            knobs, listed = family.check_knobs(c.knobs), family.check_knobs(family.level_knobs(0))
            out.append((c.family, {k: knobs[k] for k in surface if knobs[k] != listed[k]}))
        return out

    copies, varied = games(False), games(True)
    assert all(changed == {} for _, changed in copies)  # nine more draws of the same three games
    assert all(changed == {} for _, changed in varied[:3])  # a family's first draw is its game as listed
    assert all(len(changed) == 1 for _, changed in varied[3:])  # a repeat: one dimension at a training choice
    assert all(in_training_slice(dict(changed)) for _, changed in varied)
    distinct = {json.dumps(g, sort_keys=True) for g in varied}
    assert len(distinct) == 12
    # Nor does an edit change only the instances (``variant``).
    designer = MutationDesigner(seed=4, config={"distinct_games": True})
    first = asyncio.run(designer.propose(DesignContext(skill=SKILL, count=3)))
    edits = [c for _ in range(6) for c in asyncio.run(designer.propose(
        DesignContext(skill=SKILL, count=6, parents=_as_parents(first, [0.9, 0.5, 0.5]))))
        if c.lineage.operator == "vary"]
    assert edits and all(set(c.notes.edit) != {"variant"} for c in edits)


def test_the_designer_keeps_each_proposed_position_once_however_many_rounds_propose_it() -> None:
    from spadegym.designers.mutation import _position

    family = get_family("knapsack")  # 12 difficulties: 40 proposals repeat some
    designer = MutationDesigner(seed=1, config={"fresh_uniform": True, "families": ["knapsack"]})
    points = []
    for _ in range(40):
        (cand,) = asyncio.run(designer.propose(DesignContext(skill=family.skill, count=1)))
        points.append(_position(family, cand.knobs))
    distinct = [p for i, p in enumerate(points) if p not in points[:i]]
    assert len(distinct) < len(points)  # the draws did repeat positions
    assert designer.visited["knapsack"] == distinct  # each once, in the order first proposed
    assert designer.novelty(family, family.check_knobs(cand.knobs)) == 0.0


def test_a_candidate_awaiting_its_reward_is_a_named_record_stored_as_before() -> None:
    """The designer keeps each pending candidate's operator and scope by name; its state stores them as the
    ``[operator, scope]`` pair it always has, and a resumed designer reads that pair back as the record."""
    from spadegym.designers.mutation import Pending

    designer = MutationDesigner(seed=4)
    [cand] = asyncio.run(designer.propose(DesignContext(skill="Spatial Reasoning", count=1)))
    pending = designer.pending[cand.candidate_id]
    assert pending == Pending(cand.lineage.operator, "global") and pending.operator == cand.lineage.operator
    state = json.loads(json.dumps(designer.state_dict()))
    assert state["pending"] == {cand.candidate_id: [cand.lineage.operator, "global"]}
    again = MutationDesigner(seed=0)
    again.load_state_dict(state)
    assert again.pending == designer.pending and again.state_dict() == designer.state_dict()
