"""A designer's notes are typed records: a misspelt note fails, and each is stored with its keys in order."""

from __future__ import annotations

import json

import pytest

from spadegym.designers.base import Candidate, Level
from spadegym.designers.notes import EditNotes, MutationNotes, RemoteNotes, WriteNotes, notes_as


def written(**notes) -> WriteNotes:
    return WriteNotes(corpus_doc=None, round=2, prompt="p", memory_examples=["e1"], **notes)


def test_a_misspelt_note_is_an_error_not_a_new_key() -> None:
    notes = written()
    with pytest.raises(AttributeError):
        notes.compleiton = "x"  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        notes_as(notes, EditNotes)
    assert notes_as(notes, WriteNotes) is notes


def test_a_written_file_is_stored_in_the_order_it_was_made() -> None:
    notes = written(completion="c", trace_ref="t", fixes=["f"], first_attempt_valid=True, repaired=False,
                    leaking_hint="h", hint_rewrites=1, declared_skill=None, declares_other_skill=True,
                    attempts=1, seconds=0.5)
    assert list(notes.to_dict()) == ["corpus_doc", "round", "prompt", "memory_examples", "completion", "trace_ref",
                                     "fixes", "first_attempt_valid", "repaired", "leaking_hint", "hint_rewrites",
                                     "declared_skill", "attempts", "seconds"]
    assert notes.to_dict()["declared_skill"] is None  # a file that declares no SKILL, where one was asked for


def test_a_proposal_refused_before_its_first_check_is_stored_neither_valid_first_nor_repaired() -> None:
    refused = written(completion="prose", attempts=1, seconds=0.1)
    assert json.dumps(refused.to_dict()) == json.dumps(
        {"corpus_doc": None, "round": 2, "prompt": "p", "memory_examples": ["e1"], "completion": "prose",
         "attempts": 1, "seconds": 0.1, "first_attempt_valid": False, "repaired": False})
    edit = EditNotes(mode="edit", parent="p0", group="p0", prompt="p", completion="{}", seconds=0.2,
                     edit={"size": 5}, before={"size": 4})
    assert edit.to_dict() == {"mode": "edit", "parent": "p0", "group": "p0", "prompt": "p", "completion": "{}",
                              "edit": {"size": 5}, "from": {"size": 4}, "seconds": 0.2}
    edit.refusal_reason, edit.attempts = "no edit", 1  # refused: counted, never checked
    assert list(edit.to_dict())[-4:] == ["attempts", "seconds", "first_attempt_valid", "repaired"]


def test_the_store_keeps_the_notes_then_the_pool_file_and_the_part() -> None:
    fresh = MutationNotes(operator_probabilities={"new": 1.0}, level={"size": 4})
    cand = Candidate(Level("src", "s"), notes=fresh, pool_file="a.py", part="mutation")
    assert cand.stored_meta() == {"operator_probabilities": {"new": 1.0}, "level": {"size": 4}, "file": "a.py",
                                  "source": "mutation"}
    assert Candidate(Level("src", "s"), notes=RemoteNotes("http://x")).to_dict()["meta"] == {"url": "http://x"}
    assert Candidate(Level("src", "s")).stored_meta() == {}
