"""A designer's own notes on how it made a proposal: one typed record per kind of designer.

A candidate carries its designer's record (``Candidate.notes``); the store keeps it as the proposal's
``meta`` (``to_dict``: each record's keys, in its order). Only designers read the notes (a model designer
its own); the loop, the composites and the store read a candidate's typed fields. The records have slots,
so a misspelt note is an AttributeError, never a silent new key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

__all__ = ["EditNotes", "ModelNotes", "MutationNotes", "Notes", "RemoteNotes", "WriteNotes", "notes_as"]


class Notes(Protocol):
    """Any designer's notes: what the store keeps of them."""

    def to_dict(self) -> dict[str, Any]: ...


N = TypeVar("N")


def notes_as(notes: Notes | None, kind: type[N]) -> N:
    """``notes`` as the record its designer made (``kind``); a TypeError when another designer made them."""
    if not isinstance(notes, kind):
        raise TypeError(f"{kind.__name__} expected, found {type(notes).__name__}")
    return notes


def _given(**values: Any) -> dict[str, Any]:
    """The notes taken (not None), in the order given."""
    return {key: value for key, value in values.items() if value is not None}


@dataclass(slots=True, kw_only=True)
class MutationNotes:
    """The mutation designer's: the operator odds it drew from, and a fresh draw's knobs or an edit of a parent."""

    operator_probabilities: dict[str, float]
    level: dict[str, Any] | None = None  # a fresh draw's knobs
    edit: dict[str, Any] | None = None  # an edit's new values (None: a fresh draw)
    before: dict[str, Any] | None = None  # the edited knobs' values in the parent (stored as ``from``)
    parent_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        drawn = {"level": self.level} if self.edit is None else {
            "edit": self.edit, "from": self.before, "parent_score": self.parent_score}
        return {"operator_probabilities": self.operator_probabilities, **drawn}


@dataclass(frozen=True, slots=True)
class RemoteNotes:
    """A remote-level designer's: the server that serves the level."""

    url: str

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url}


@dataclass(slots=True, kw_only=True)
class ModelNotes:
    """What a model designer notes in every mode: the request, the reply, and how the proposal ended."""

    prompt: str
    completion: str | None = None  # the reply's text (None: no reply came)
    trace_ref: str | None = None  # a local model's reference to the completion it is rewarded for
    attempts: int | None = None  # counted once the designer is done with a file it wrote, or refused the proposal
    seconds: float | None = None
    first_attempt_valid: bool | None = None  # set once a written file is checked
    repaired: bool | None = None

    def _closing(self) -> dict[str, Any]:
        """Attempts and time; a proposal closed before any file of it was checked is stored as neither valid
        first nor repaired (after its time)."""
        unchecked = self.attempts is not None and self.first_attempt_valid is None
        return {**_given(attempts=self.attempts, seconds=self.seconds),
                **({"first_attempt_valid": False, "repaired": False} if unchecked else {})}


@dataclass(slots=True, kw_only=True)
class WriteNotes(ModelNotes):
    """The model designer's in write mode (a whole file written, repaired and hinted)."""

    corpus_doc: str | None  # the corpus document the request quoted
    round: int
    memory_examples: list[str]  # the remembered levels the request showed
    fixes: list[str] | None = None  # mechanical fixes made to the replies' code (None: no code came)
    leaking_hint: str | None = None  # the last hint the leak check refused
    hint_rewrites: int | None = None  # hints refused before the one accepted
    declared_skill: str | None = None  # the file's SKILL (None: it declares none) ...
    declares_other_skill: bool = False  # ... stored only when it is not the skill asked for

    def to_dict(self) -> dict[str, Any]:
        checked = _given(fixes=self.fixes, first_attempt_valid=self.first_attempt_valid, repaired=self.repaired,
                         leaking_hint=self.leaking_hint, hint_rewrites=self.hint_rewrites)
        return {"corpus_doc": self.corpus_doc, "round": self.round, "prompt": self.prompt,
                "memory_examples": self.memory_examples,
                **_given(completion=self.completion, trace_ref=self.trace_ref), **checked,
                **({"declared_skill": self.declared_skill} if self.declares_other_skill else {}), **self._closing()}


@dataclass(slots=True, kw_only=True)
class EditNotes(ModelNotes):
    """The model designer's in the edit modes: a parent's knobs edited (``edit``) or its code (``code_edit``)."""

    mode: Literal["edit", "code_edit"]
    parent: str  # the parent's key
    group: str  # the GRPO group of its completion: the edits of one parent
    refusal_reason: str | None = None  # why the reply is no usable edit
    edit: dict[str, Any] | None = None  # the knobs' new values (edit mode)
    before: dict[str, Any] | None = None  # their values in the parent (stored as ``from``)
    level: int | None = None  # the family level the reply named, if it named one
    named_operator: str | None = None  # what the reply called its operator, when that differs
    code_edit: str | None = None  # the code edit's form: "diff" or "method"

    def to_dict(self) -> dict[str, Any]:
        edited = {} if self.edit is None else {"edit": self.edit, "from": self.before}
        return {"mode": self.mode, "parent": self.parent, "group": self.group, "prompt": self.prompt,
                **_given(completion=self.completion, trace_ref=self.trace_ref, refusal_reason=self.refusal_reason),
                **edited, **_given(level=self.level, named_operator=self.named_operator, code_edit=self.code_edit),
                **self._closing()}
