"""Edit mode over an OpenAI-compatible server: a parent level from the buffer, a structured edit, the child level."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from spadegym.designers.base import DesignContext, LevelSummary
from spadegym.designers.edit_mode import plan_parents
from spadegym.designers.llm import LLMDesigner, LLMDesignerConfig
from spadegym.families import get_family
from spadegym.llm.client import EndpointConfig
from spadegym_testing.fake_server import FakeOpenAIServer, FakeReply

MAZE = get_family("grid_maze")


def parent(env_id: str = "r001-spati-00", win_rate: float = 0.95, level: int = 0) -> LevelSummary:
    return LevelSummary(env_id, MAZE.skill, win_rate, 1.0, 1.0 - win_rate, 0.3, family=MAZE.name,
                        knobs=MAZE.level_knobs(level), depth=2, times_played=3)


def designer(server: FakeOpenAIServer, **config: Any) -> LLMDesigner:
    return LLMDesigner(EndpointConfig(model="m", base_url=server.url, retries=0), corpus=None, seed=1,
                       config=LLMDesignerConfig(mode="edit", **config))


def first_schema_choice(request: dict[str, Any], index: int) -> str:
    """A server honouring response_format: the first operator's first name at its first value."""
    schema = request["response_format"]["json_schema"]["schema"]
    branch = schema.get("anyOf", [schema])[index % len(schema.get("anyOf", [schema]))]
    operator = branch["properties"]["operator"]["enum"][0]
    name, values = next(iter(branch["properties"]["changes"]["properties"].items()))
    return json.dumps({"operator": operator, "changes": {name: values["enum"][0]}})


def test_an_edit_of_a_buffer_level_is_the_child_level_with_its_lineage():
    with FakeOpenAIServer(first_schema_choice) as server:
        made = asyncio.run(designer(server, edits_per_parent=2).propose(
            DesignContext(skill=MAZE.skill, count=2, parents=[parent()])))
    request = server.requests[0]
    prompt = request["messages"][-1]["content"]
    assert "wins 0.95 of its plays without the hint" in prompt and "too easy" in prompt
    assert "size: [4] 5 6 7 8 9" in prompt and "bracket" not in prompt  # the ladder; no held-out choice
    assert request["response_format"]["type"] == "json_schema" and request["max_tokens"] == 128
    for c in made:
        assert c.refusal is None and c.family == MAZE.name and c.verdict is None  # the judge validates it
        assert c.lineage.parents == ["r001-spati-00"] and c.lineage.depth == 3
        assert c.source == MAZE.render(c.knobs)
        assert c.notes.group == "r001-spati-00" and c.notes.edit
    assert {c.lineage.operator for c in made} == {"harder", "vary"}
    harder = next(c for c in made if c.lineage.operator == "harder")  # the first name offered: the next level
    assert harder.notes.level == 1 and harder.knobs == {**parent().knobs, **MAZE.level_knobs(1)}
    assert "level: [0] 1 2 3" in prompt


def test_a_server_that_refuses_response_format_is_asked_plainly_from_then_on():
    def server_script(request: dict[str, Any], index: int) -> str | FakeReply:
        if "response_format" in request:
            return FakeReply(status=400, content="response_format is not supported")
        return 'Sure! {"operator": "easier", "changes": {"walls": 0.1}}'

    with FakeOpenAIServer(server_script) as server:
        d = designer(server, edits_per_parent=3)
        made = asyncio.run(d.propose(DesignContext(skill=MAZE.skill, count=3, parents=[parent(win_rate=0.05, level=1)])))
    assert [c.refusal for c in made] == [None] * 3 and all(c.knobs["walls"] == 0.1 for c in made)
    assert d.report()["fixes"]["response_format_refused"] >= 1
    assert "response_format" not in server.requests[-1]


def test_a_reply_that_is_no_edit_is_its_own_refusal_kind():
    replies = iter(["I cannot help with that.", '{"operator": "harder", "changes": {"size": 99}}'])
    with FakeOpenAIServer(lambda request, i: next(replies)) as server:
        d = designer(server, edits_per_parent=2, constrained=False)
        made = asyncio.run(d.propose(DesignContext(skill=MAZE.skill, count=2, parents=[parent()])))
    assert sorted(c.refusal for c in made) == ["edit_out_of_space", "malformed_edit"]
    for c in made:
        assert c.verdict is not None and c.verdict.category == c.refusal and not c.verdict.valid
        assert c.verdict.failed[0].name == "edit_form"
    assert d.report()["refused"] == {"edit_out_of_space": 1, "malformed_edit": 1}


def test_without_parents_it_edits_fresh_levels_of_the_skill_and_never_an_excluded_family():
    import random

    context = DesignContext(skill=MAZE.skill, count=6, parents=[])
    plan = plan_parents(context, 3, random.Random(0), exclude=("grid_maze", "key_rooms"))
    assert len(plan) == 6 and {p.family for p in plan} == {"sonar_dig"}
    assert all(p.key == "fresh:sonar_dig" and p.summary is None for p in plan)
    groups = plan_parents(DesignContext(skill=MAZE.skill, count=5, parents=[parent("a"), parent("b")]), 2,
                          random.Random(0))
    keys = [p.key for p in groups]  # groups of 2 edits of one parent: each parent once, then again
    assert len(keys) == 5 and keys[0] == keys[1] and keys[2] == keys[3] and sorted(map(keys.count, "ab")) == [2, 3]


def test_each_request_names_the_operators_in_its_own_order():
    # A small model takes the operator named first; naming them in one fixed order would decide its edits.
    from spadegym.designers.edit_mode import operator_order

    assert operator_order("llm-1-00003") == operator_order("llm-1-00003")  # a resume asks the same
    orders = {tuple(operator_order(f"llm-1-{k:05d}")) for k in range(60)}
    assert len(orders) == 6  # every order of the three
    with FakeOpenAIServer(first_schema_choice) as server:
        asyncio.run(designer(server, edits_per_parent=6).propose(
            DesignContext(skill=MAZE.skill, count=6, parents=[parent()])))
    firsts = {r["messages"][-1]["content"].split('{"operator": "')[1].split('"')[0] for r in server.requests}
    assert len(firsts) > 1  # six requests about one parent do not all name the same operator first


def test_a_directed_designer_asks_only_for_what_the_verdict_says_and_an_undirected_one_for_anything():
    def offered(request: dict[str, Any]) -> set[str]:
        schema = request["response_format"]["json_schema"]["schema"]
        return {b["properties"]["operator"]["enum"][0] for b in schema.get("anyOf", [schema])}

    hard = parent(win_rate=0.05, level=2)
    for directed, expected in ((True, {"easier"}), (False, {"harder", "easier", "vary"})):
        with FakeOpenAIServer(first_schema_choice) as server:
            made = asyncio.run(designer(server, directed=directed, edits_per_parent=1).propose(
                DesignContext(skill=MAZE.skill, count=1, parents=[hard])))
        assert offered(server.requests[0]) == expected
        prompt = server.requests[0]["messages"][-1]["content"]
        assert ('"operator": "easier", "changes"' in prompt) == directed and made[0].refusal is None
    assert made[0].lineage.operator != "easier"  # undirected, the first branch offered is another operator
