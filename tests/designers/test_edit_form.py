"""The edit form: what a model designer may reply to change a parent level, read leniently, held to the space."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

from spadegym.designers.edit_form import MALFORMED, NO_CHANGE, OUT_OF_SPACE, EditForm, EditRefused, LevelEdit
from spadegym.designers.edit_grammar import edit_grammar
from spadegym.families import get_family
from spadegym.families.edits import edit_space


@pytest.fixture(scope="module")
def form() -> EditForm:
    space = edit_space("grid_maze")
    return EditForm.of(space, space.level(1))  # size 4 (a clipped ladder), walls 0.2, sparse reward


def test_the_form_offers_every_training_value_and_no_held_out_choice(form):
    space = edit_space("grid_maze")
    assert form.options["harder"]["size"] == [5, 6, 7, 8, 9]  # the listed ladder, then its extension
    assert form.options["easier"]["walls"] == [0.1]
    for name, values in form.options["vary"].items():
        assert set(values).isdisjoint(space.dimensions[name].held_out), name
        assert form.knobs[name] not in values  # never the current value
    assert "bracket" not in form.options["vary"]["layout"]


@pytest.mark.parametrize("reply, changes", [
    ('{"operator": "harder", "changes": {"size": 7}}', {"size": 7}),
    ('```json\n{"operator": "harder", "changes": {"size": "7", "walls": 0.30}}\n```', {"size": 7, "walls": 0.3}),
    ("{'op': 'harder', 'Size': 6,}", {"size": 6}),  # single quotes, a trailing comma, knobs at the top level
    ('{"harder": {"slack": 0}}', {"slack": 0}),
    ("<think>too easy</think> harder: size=9, slack = 0", {"size": 9, "slack": 0}),
    ('{"operator": "vary", "changes": {"line-order": "event_first", "size": 4}}', {"line_order": "event_first"}),
])
def test_replies_are_read_leniently(form, reply, changes):
    edit = form.parse(reply)
    assert isinstance(edit, LevelEdit), edit
    assert edit.changes == changes
    assert edit.knobs == {**form.knobs, **changes}


@pytest.mark.parametrize("reply, kind, says", [
    ("I would make it harder.", MALFORMED, "JSON object like"),
    ('{"operator": "harder", "changes": {"depth": 3}}', OUT_OF_SPACE, "no knob or variation of grid_maze"),
    ('{"operator": "vary", "changes": {"layout": "bracket"}}', OUT_OF_SPACE, "not allowed"),  # held out
    ('{"operator": "harder", "changes": {"size": 40}}', OUT_OF_SPACE, "allowed: 5, 6"),
    ('{"operator": "harder", "changes": {"size": 4}}', NO_CHANGE, "changes nothing"),
])
def test_replies_that_are_no_edit_are_refused_by_kind(form, reply, kind, says):
    refused = form.parse(reply)
    assert isinstance(refused, EditRefused) and refused.kind == kind
    assert says in refused.reason


def test_the_operator_is_what_the_changes_do(form):
    edit = form.parse('{"operator": "easier", "changes": {"size": 6}}')
    assert edit.operator == "harder" and edit.named_operator == "easier"
    assert form.parse('{"changes": {"walls": 0.1, "size": 6}}').operator == "mixed"
    assert form.parse('{"changes": {"menu": "sorted"}}').operator == "vary"


def test_every_reply_of_the_grammar_fits_the_schema_and_renders(form):
    replies = edit_grammar(form).language()
    assert len(replies) > 100 and form.example() in replies
    schema = form.schema()
    family = get_family("grid_maze")
    for reply in random.Random(0).sample(replies, 40):
        jsonschema.validate(json.loads(reply), schema)
        edit = form.parse(reply)
        assert isinstance(edit, LevelEdit) and edit.operator == json.loads(reply)["operator"]
        assert family.render(edit.knobs)
    with pytest.raises(jsonschema.ValidationError):  # a held-out choice is outside the schema too
        jsonschema.validate({"operator": "vary", "changes": {"layout": "bracket"}}, schema)


def test_level_moves_every_difficulty_knob_to_a_level_all_one_way(form):
    space = edit_space("grid_maze")
    assert form.order[0] == "level" and form.options["easier"]["level"] == [0]
    assert form.options["harder"]["level"][:2] == [2, 3]  # level 1 is the parent's own: not offered
    easier = form.parse('{"operator": "easier", "changes": {"level": 0}}')
    assert easier.operator == "easier" and easier.level == 0
    assert easier.knobs == {**form.knobs, **{k: v for k, v in space.level(0).items() if k in space.knobs}}
    assert set(easier.changes) == {k for k in space.knobs if space.level(0)[k] != space.level(1)[k]}
    both = form.parse('{"operator": "harder", "changes": {"size": 5, "level": 3}}')  # a knob beside it wins
    assert both.knobs["size"] == 5 and both.knobs["walls"] == space.level(3)["walls"]
    refused = form.parse('{"operator": "harder", "changes": {"level": 1}}')
    assert isinstance(refused, EditRefused) and refused.kind == OUT_OF_SPACE and "allowed: 0, 2" in refused.reason


def test_a_level_with_knobs_both_ways_is_no_operators_and_is_not_offered():
    space = edit_space("grid_maze")
    parent = {**space.level(2), "size": 9}  # the largest maze, level 2's walls and slack
    form = EditForm.of(space, parent)
    offered = [*form.options.get("harder", {}).get("level", []), *form.options.get("easier", {}).get("level", [])]
    for level in offered:
        moves = {space.knobs[k].values.index(space.level(level)[k]) - space.knobs[k].values.index(parent[k])
                 for k in space.knobs}
        assert not (min(moves) < 0 < max(moves)), level
    assert 3 not in offered  # size back down, walls and slack up


def test_a_directed_form_offers_only_the_operators_asked_for_unless_none_has_an_edit():
    space = edit_space("grid_maze")
    form = EditForm.of(space, space.level(2), operators=("easier",))
    assert list(form.options) == ["easier"] and set(form.levels) == {0, 1}
    refused = form.parse('{"operator": "harder", "changes": {"size": 9}}')
    assert isinstance(refused, EditRefused) and refused.kind == OUT_OF_SPACE
    assert form.parse('{"operator": "easier", "changes": {"level": 1}}').operator == "easier"
    easiest = EditForm.of(space, space.level(0), operators=("easier",))  # nothing is easier: every operator
    assert set(easiest.options) == {"harder", "vary"}
