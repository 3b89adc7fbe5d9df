"""The red-team parts one at a time: reward, clusters, shrinking, flakiness, the suite on disk."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from spadegym.errors import UserError
from spadegym.families import get_family
from spadegym.llm.client import EndpointConfig, LLMClient
from spadegym.redteam import Case, SuiteError, load_suite
from spadegym.redteam.clusters import ClusterMemory, cluster_key, dominates
from spadegym.redteam.config import load_redteam_config
from spadegym.redteam.flakiness import wilson_interval
from spadegym.redteam.minimise import Minimal, code_size, level_size, shrink_level, simplify_file
from spadegym.redteam.probe import Probe
from spadegym.redteam.suite import FoundCase, export_suite, write_suite
from spadegym.signals import EnvStats, get_designer_reward
from spadegym.validate import ValidationConfig
from spadegym_testing.fake_server import FakeOpenAIServer


def stats(win: float, hint: float = 0.0, solution: bool = True) -> EnvStats:
    return EnvStats(win, hint, win, hint, plays=4, plays_hint=4, oracle_return=1.0 if solution else None)


def test_the_failure_reward_is_found_by_name_and_pays_only_for_solvable_failures() -> None:
    failure = get_designer_reward("failure")
    assert failure(stats(0.25)) == 0.75  # solution() wins: fully solvable
    assert failure(stats(0.0, hint=0.5, solution=False)) == 0.5  # solvable as often as the hinted arm wins
    assert failure(stats(0.0, hint=0.0, solution=False)) == 0.0  # nobody wins it: worth nothing
    assert failure(stats(1.0)) == 0.0


def test_wilson_interval_is_tight_for_many_plays_and_wide_for_few() -> None:
    low, high = wilson_interval(12, 12)
    assert 0.75 < low < 0.76 and high == 1.0
    assert wilson_interval(1, 2)[0] < 0.1 < 0.9 < wilson_interval(1, 2)[1]
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_a_cluster_is_the_family_and_minimal_knobs_without_those_the_target_cannot_tell_apart() -> None:
    easiest = get_family("take_away").level_knobs(0)["stones"]
    a = cluster_key("take_away", {"piles": 3, "variant": 1}, "", "lost")
    b = cluster_key("take_away", {"piles": 3, "variant": 6, "stones": easiest}, "", "out_of_turns")
    assert a == b and "variant" not in a and f"stones={easiest}" in a
    # Sparse and partial rewards are one game to a frozen target: the same observations, the same win.
    sparse = cluster_key("take_away", {"piles": 3, "reward_shaping": "sparse"}, "", "lost")
    assert sparse == a and "reward_shaping" not in sparse
    games = []
    for shaping in ("partial", "sparse"):
        namespace: dict = {}
        exec(get_family("take_away").render({"piles": 3, "reward_shaping": shaping}), namespace)  # a built-in file
        env = next(v for k, v in namespace.items() if k.endswith("Env") and isinstance(v, type))()
        opening = env.reset(seed=5)[0]
        steps = [env.step(action) for action in env.solution()]
        games.append((opening, [(obs, done) for obs, _r, done, _t, _i in steps], steps[-1][1]))
    assert games[0] == games[1] and games[0][2] == 1.0
    assert cluster_key("take_away", {"piles": 2}, "", "lost") != a  # a knob it sees still tells clusters apart
    code = "class XEnv:\n    pass\n"
    assert cluster_key(None, {}, code, "lost") != cluster_key(None, {}, code, "format")


def test_memory_attributes_harder_levels_to_a_known_minimal_failure_and_lowers_novelty() -> None:
    memory = ClusterMemory()
    key = cluster_key("take_away", {"piles": 3}, "", "lost")
    assert memory.novelty(key) == 1.0
    memory.add(key, "take_away", {"piles": 3})
    assert memory.novelty(key) == 0.5
    assert dominates("take_away", {"piles": 3, "stones": 9}, {"piles": 3})
    assert memory.known_cluster("take_away", {"piles": 3, "stones": 9, "variant": 4}) == key
    assert memory.known_cluster("take_away", {"piles": 2, "stones": 11}) is None
    assert memory.known_cluster("knapsack", {}) is None


def test_shrinking_lowers_each_knob_while_the_level_still_fails() -> None:
    family = get_family("take_away")
    start = family.level_knobs(3)  # piles 3, stones 11, max_take 3, the strongest opponent, sparse
    tried: list[dict] = []

    async def judge(source: str, hint: str | None, params: object = None) -> tuple[Probe, bool]:
        knobs = eval(source.split("DIFFICULTY = ")[1].splitlines()[0])  # the rendered file's own knobs
        tried.append(knobs)
        # The planted weakness: three piles, or a take limit of 3 with eleven stones.
        return Probe(source, True, {}), knobs["piles"] == 3 or (knobs["max_take"] == 3 and knobs["stones"] == 11)

    minimal = asyncio.run(shrink_level("take_away", start, Probe(family.render(start), True, {}), judge))
    # Piles are tried first: two piles still fail through the other weakness, which is the one kept.
    assert minimal.knobs == {**family.level_knobs(0), "stones": 11, "max_take": 3, "variant": start["variant"]}
    assert minimal.size < level_size("take_away", start)
    assert family.render(minimal.knobs) == minimal.source
    assert len(minimal.steps) == len(tried) and any(not s["still_fails"] for s in minimal.steps)


SIMPLER = '''```python
class CountEnv:
    def reset(self, seed=None):
        return "count to 2", {}

    def step(self, action):
        return "done", float(action == "2"), True, False, {}
```'''


def test_a_written_file_is_simplified_by_the_model_only_while_it_still_fails() -> None:
    original = SIMPLER.split("```python\n")[1].split("```")[0].replace("return \"done\"", "x = 1\n        y = 2\n"
                                                                      "        return \"done\"")
    verdicts: list[str] = []

    async def judge(source: str, hint: str | None, params: object = None) -> tuple[Probe, bool]:
        verdicts.append(source)
        return Probe(source, True, {}), "count to 2" in source

    async def simplify(client: LLMClient) -> Minimal:
        try:
            return await simplify_file(original, None, Probe(original, True, {}), judge, client, turns=3)
        finally:
            await client.aclose()

    with FakeOpenAIServer([SIMPLER, "no code today", SIMPLER.replace("count to 2", "count to 3")]) as server:
        minimal = asyncio.run(simplify(LLMClient(EndpointConfig(model="m", base_url=server.url))))
        asked = len(server.requests)
    assert asked == 3 and "simpler version" in server.requests[0]["messages"][0]["content"].lower()
    assert minimal.size == code_size(minimal.source) < code_size(original) and "count to 2" in minimal.source
    assert [s["still_fails"] for s in minimal.steps] == [True, None, None]  # the third is not shorter


def make_suite(tmp_path: Path) -> Path:
    family = get_family("take_away")
    knobs = {**family.level_knobs(0), "piles": 3}
    case = Case(id="c001-take_away", file="", skill=family.skill, seeds=[5, 6], family="take_away", knobs=knobs,
                original_knobs=family.level_knobs(3), size=2, original_size=9, cluster="take_away:piles=3",
                failure_pattern="lost", failure_rate=0.9, failure_interval=[0.6, 0.98], failure_plays=12,
                solution_return=1.0)
    return write_suite(tmp_path / "suite", [FoundCase(case, family.render(knobs), family.render(family.level_knobs(3)))],
                       {"target": "openai:weak", "designer": "mutation", "seed": 0, "pass_at": 0.5, "search": {}})


def test_a_written_suite_reads_back_and_an_altered_file_is_one_sentence(tmp_path: Path) -> None:
    path = make_suite(tmp_path)
    suite = load_suite(path)
    assert [c.id for c in suite.cases] == ["c001-take_away"] and suite.cases[0].seeds == [5, 6]
    assert "import copy" in suite.sources["c001-take_away"] and suite.pass_at == 0.5
    case_file = path / suite.cases[0].file
    case_file.write_text(case_file.read_text() + "\n# edited\n")
    with pytest.raises(SuiteError, match="does not match its checksum"):
        load_suite(path)
    with pytest.raises(SuiteError, match="not a directory"):
        load_suite(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SuiteError, match="no manifest.json and no .py environment files"):
        load_suite(tmp_path / "empty")


def test_a_pool_directory_is_scored_as_a_suite_with_fixed_seeds(tmp_path: Path) -> None:
    family = get_family("knapsack")
    (tmp_path / "a.py").write_text(family.render(family.level_knobs(1)))
    suite = load_suite(tmp_path)
    assert suite.cases[0].family == "knapsack" and suite.cases[0].seeds == [0, 1, 2, 3]
    assert suite.cases[0].skill == "Optimization"


def test_a_suite_exports_like_a_runs_environments(tmp_path: Path) -> None:
    path = make_suite(tmp_path)
    rows = [json.loads(line) for line in export_suite(path, "jsonl").read_text().splitlines()]
    assert rows[0]["env_id"] == "c001-take_away" and rows[0]["scores"]["win_rate"] == pytest.approx(0.1)
    assert rows[0]["meta"]["cluster"] == "take_away:piles=3" and "class TakeAwayEnv" in rows[0]["code"]
    pool = export_suite(path, "spade", tmp_path / "pool")
    entry = json.loads((pool / "manifest.jsonl").read_text().splitlines()[0])  # the SPADE reference's layout
    assert entry["id"] == "c001-take_away" and (pool / entry["file"]).exists()
    assert entry["file"].startswith("games/game_") and (pool / "checksums.sha256").exists()


def test_bad_red_team_settings_are_one_sentence() -> None:
    with pytest.raises(UserError, match="did you mean 'take_away'"):
        load_redteam_config(overrides={"target": "random", "families": ["take_awy"]})
    with pytest.raises(UserError, match="'target' is required"):
        load_redteam_config()
    with pytest.raises(UserError, match="'plays_per_level' is not a known setting"):
        load_redteam_config(overrides={"target": "random"}, sets=["plays_per_level=3"])
    config = load_redteam_config(overrides={"target": "random", "families": ["take_away", "knapsack"]})
    assert config.skills == ["Mathematical Reasoning", "Optimization"]


def test_the_red_team_sections_are_typed_and_a_misspelt_key_is_one_sentence() -> None:
    with pytest.raises(UserError, match="'mutation.directd' is not a known setting; did you mean 'mutation.directed'"):
        load_redteam_config(overrides={"target": "random"}, sets=["mutation.directd=true"])
    with pytest.raises(UserError, match="'validation.random_episode' is not a known setting; did you mean"):
        load_redteam_config(overrides={"target": "random"}, sets=["validation.random_episode=3"])
    config = load_redteam_config(overrides={"target": "random", "designer": "mutation"}, sets=["mutation.directed=true"])
    assert config.mutation.directed and config.mutation.fresh_uniform  # the search's defaults stay under a --set
    with pytest.raises(UserError, match="'mutation.directed' is read only by designer mutation"):
        load_redteam_config(overrides={"target": "random"}, sets=["mutation.directed=true"])  # the search reads none
    assert config.mutation.climb and config.allocate == "yield"
    with pytest.raises(UserError, match="'allocate'"):
        load_redteam_config(overrides={"target": "random", "allocate": "greedy"})
    assert config.validation.random_episodes == ValidationConfig().random_episodes


def test_designers_can_be_limited_to_some_families() -> None:
    from spadegym.designers.base import DesignContext
    from spadegym.designers.registry import make_designer

    context = DesignContext(skill="Mathematical Reasoning", count=6)
    uniform = make_designer("uniform", seed=1, families=["take_away"])
    mutation = make_designer("mutation", seed=1, mutation={"families": ["water_jugs"]})
    assert {c.family for c in asyncio.run(uniform.propose(context))} == {"take_away"}
    assert {c.family for c in asyncio.run(mutation.propose(context))} == {"water_jugs"}


def test_a_won_level_between_a_minimal_failure_and_a_harder_level_stops_the_memory_from_skipping_it() -> None:
    family = get_family("take_away")
    easiest = family.level_knobs(0)  # the target fails the easiest games (a weakness at the easy end)
    memory = ClusterMemory()
    key = cluster_key("take_away", easiest, "", "lost")
    memory.add(key, "take_away", easiest)
    three_piles = {**easiest, "piles": 3, "max_take": 3}
    assert memory.known_cluster("take_away", three_piles) == key  # every level dominates the easiest one
    memory.add_pass("take_away", {**easiest, "max_take": 3})  # but a game with take limit 3 was won
    assert memory.known_cluster("take_away", three_piles) is None  # so three piles with limit 3 is judged
    assert memory.known_cluster("take_away", {**easiest, "stones": 11}) == key  # no won level in between


def test_won_at_keeps_a_lucky_win_of_a_sampling_target_from_closing_a_region() -> None:
    from spadegym.redteam.probe import Prober

    def prober(won_at: float | None) -> Prober:
        return Prober(None, None, seed=0, plays=4, hint_plays=4, max_win_rate=0.5, min_feasibility=0.5, won_at=won_at)

    assert prober(None).won(0.75) and not prober(None).won(0.5)  # by default, any level not failed
    assert not prober(1.0).won(0.75) and prober(1.0).won(1.0)
    config = load_redteam_config(overrides={"target": "random"}, sets=["won_at=0.75"])
    assert config.won_at == 0.75
    with pytest.raises(UserError, match="won_at .* must be above max_win_rate"):
        load_redteam_config(overrides={"target": "random"}, sets=["won_at=0.5"])
