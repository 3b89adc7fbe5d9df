"""Code-edit mode: a diff or a replaced method against a parent's source, applied, then judged by the gate."""

from __future__ import annotations

import asyncio

import pytest

from spadegym.designers.base import DesignContext, LevelSummary
from spadegym.designers.code_edit import PATCH_FAILED, apply_diff, apply_reply, replace_method
from spadegym.designers.edit_form import MALFORMED, NO_CHANGE, EditRefused
from spadegym.designers.llm import LLMDesigner, LLMDesignerConfig
from spadegym.families import get_family
from spadegym.llm.client import EndpointConfig
from spadegym.validate import validate_source
from spadegym_testing.fake_server import FakeOpenAIServer

SOURCE = "class DoorEnv:\n    max_turns = 4\n\n    def hint(self):\n        return 'look left'\n\n    def step(self, a):\n        return 'x', 0.0, True, False, {}\n"


def test_a_diff_is_applied_by_content_whatever_its_line_numbers_and_trailing_spaces():
    diff = "--- a/env.py\n+++ b/env.py\n@@ -90,3 +90,3 @@\n class DoorEnv:\n-    max_turns = 4   \n+    max_turns = 6\n \n"
    assert apply_diff(SOURCE, diff) == SOURCE.replace("max_turns = 4", "max_turns = 6")


def test_a_hunk_that_is_not_in_the_file_is_refused():
    refused = apply_diff(SOURCE, "@@ -1 +1 @@\n-    max_turns = 9\n+    max_turns = 6\n")
    assert isinstance(refused, EditRefused) and refused.kind == PATCH_FAILED and "hunk 1" in refused.reason


def test_a_method_replaces_the_one_of_its_name_or_joins_the_class():
    edited = replace_method(SOURCE, "def hint(self):\n    return 'look right'\n")
    assert "look right" in edited and "look left" not in edited and edited.count("def hint") == 1
    added = replace_method(SOURCE, "    def valid_actions(self):\n        return ['left', 'right']\n")
    assert "    def valid_actions(self):\n        return ['left', 'right']" in added
    compile(added, "env.py", "exec")


@pytest.mark.parametrize("reply, kind", [
    ("Make it harder.", MALFORMED),
    ("```python\ndef a(self):\n    pass\ndef b(self):\n    pass\n```", MALFORMED),
    ("```python\ndef hint(self):\n    return 'look left'\n```", NO_CHANGE),
])
def test_replies_that_change_nothing_usable_are_refused_by_kind(reply, kind):
    refused = apply_reply(SOURCE, reply)
    assert isinstance(refused, EditRefused) and refused.kind == kind


def test_a_code_edit_designer_edits_its_parent_and_the_gate_accepts_the_file(tmp_path):
    family = get_family("take_away")
    knobs = family.level_knobs(0)
    source = family.render(knobs)
    line = next(ln for ln in source.splitlines() if "max_turns" in ln and "=" in ln)
    diff = f"```diff\n@@ -1,1 +1,1 @@\n-{line}\n+{line.rstrip()}  # the designer's edit\n```"
    parent = LevelSummary("p0", family.skill, 0.9, 1.0, 0.1, 0.2, family=family.name, knobs=knobs, source=source)
    with FakeOpenAIServer(lambda request, i: diff if i % 2 == 0 else "no idea") as server:
        designer = LLMDesigner(EndpointConfig(model="m", base_url=server.url, retries=0), corpus=None,
                               config=LLMDesignerConfig(mode="code_edit", edits_per_parent=2))
        made = asyncio.run(designer.propose(DesignContext(skill=family.skill, count=2, parents=[parent])))
    edited, refused = sorted(made, key=lambda c: c.refusal is not None)
    assert "<environment_code>" in server.requests[0]["messages"][-1]["content"]
    assert edited.refusal is None and "# the designer's edit" in edited.source
    assert edited.lineage.parents == ["p0"] and edited.lineage.operator == "code_edit" and edited.family is None
    assert refused.refusal == MALFORMED and refused.verdict.category == MALFORMED
    assert validate_source(edited.source, "edited.py").valid
