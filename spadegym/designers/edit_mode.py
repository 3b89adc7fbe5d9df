"""Edit mode of a model designer: the model changes a parent level from the buffer instead of writing a file.

One proposal, start to end::

    parent (a buffer level with its statistics, or a fresh level 0 of a family of the skill)
        ─► prompt: family, skill, the level's knobs and variation, the agent's win rates and
           regret, the band verdict, every value the family's edit space allows
        ─► reply (held to the edit's form where the backend allows: ``edit_form``, ``edit_grammar``)
        ─► parse leniently ─► apply to the parent ─► render ─► Candidate (the gate judges it like any other)

The proposals of one call come in groups of ``edits_per_parent`` edits of the
same parent: a local model's GRPO group (``designers.hf``). A reply that is no
edit is refused under its own kind (``malformed_edit``, ``edit_out_of_space``,
``no_change``), so the loop counts it apart from files the gate rejects.
Lineage records the parent, the operator and the depth; ``meta`` the changes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..families import FamilyError, get_family, list_families
from ..families.edits import EditSpace, edit_space
from ..llm.client import ChatResult
from ..signals import bands
from .base import Candidate, DesignContext, Level, LevelSummary, Lineage, Params
from .edit_form import LEVEL, OPERATORS, EditForm, EditRefused
from .llm_config import LLMDesignerConfig
from .notes import EditNotes

Message = dict[str, str]
#: Asks the model once: (messages, the form its reply is held to or None, max tokens) -> the reply.
Ask = Callable[[list[Message], "EditForm | None", int], Awaitable[ChatResult]]


@dataclass
class Parent:
    """The level an edit starts from: a buffer level (with what the agent did on it) or a fresh one (never played)."""

    family: str
    knobs: dict[str, Any]
    key: str  # its env id, or "fresh:FAMILY": the GRPO group of its edits
    summary: LevelSummary | None = None
    source: str | None = None

    @property
    def env_id(self) -> str | None:
        return self.summary.env_id if self.summary is not None else None

    @property
    def depth(self) -> int:
        return self.summary.depth if self.summary is not None else 0


def plan_parents(context: DesignContext, per_parent: int, rng: random.Random, *,
                 exclude: Sequence[str] = ()) -> list[Parent]:
    """``context.count`` parents, ``per_parent`` proposals each: buffer levels of a built-in family drawn without
    replacement (then again), or fresh levels of the skill's families when the buffer has none."""
    usable = [p for p in context.parents if p.family and p.family not in exclude and _fits(p)]
    groups = max(1, math.ceil(context.count / per_parent))
    chosen: list[Parent] = []
    while len(chosen) < groups:
        if usable:
            draw = rng.sample(usable, min(len(usable), groups - len(chosen)))
            chosen += [Parent(p.family or "", dict(p.knobs), p.env_id, p, p.source) for p in draw]
        else:
            families = [f for f in (list_families(context.skill) or list_families()) if f.name not in exclude]
            if not families:
                return []
            family = rng.choice(families)
            space = edit_space(family)
            knobs = {**space.level(0), **({"variant": rng.choice(space.allowed("variant"))}
                                          if "variant" in space.dimensions else {})}
            chosen.append(Parent(family.name, knobs, f"fresh:{family.name}"))
    return [parent for parent in chosen for _ in range(per_parent)][:context.count]


def _fits(summary: LevelSummary) -> bool:
    """A level whose knobs its family's space still reads (not one rendered by an older family version)."""
    try:
        edit_space(summary.family or "").check(summary.knobs, held_out=True)
    except FamilyError:
        return False
    return True


EDIT_SYSTEM = (
    "You edit levels of text games so that a learning agent wins about half of its plays without a hint: "
    "harder when it wins too often, easier when it rarely wins, varied when it is about right. "
    "Reply with one JSON object and nothing else."
)


def side(summary: LevelSummary | None) -> str | None:
    """Where the parent sits against the band the designer reward pays for: easy, hard, band (None: not played)."""
    low, high = bands.PLATEAU
    if summary is None:
        return None
    return "easy" if summary.win_rate > high else "hard" if summary.win_rate < low else "band"


def verdict(summary: LevelSummary | None) -> str:
    """``side`` in words, with the band."""
    low, high = bands.PLATEAU
    target = f"{low:.2f}-{high:.2f} without the hint"
    return {None: "not played yet", "easy": f"too easy (the target is {target})",
            "hard": f"too hard (the target is {target})",
            "band": f"about right (inside the target {target})"}[side(summary)]


def asked_operators(summary: LevelSummary | None) -> tuple[str, ...] | None:
    """The operators the verdict asks for (``llm_designer.directed``): None where it asks for none in particular."""
    return {"hard": ("easier",), "easy": ("harder", "vary")}.get(side(summary) or "")


def edit_messages(parent: Parent, space: EditSpace, form: EditForm, example: bool = True,
                  operators: Sequence[str] = OPERATORS) -> list[Message]:
    """The request for one edit of ``parent``: the level, how the agent does on it, and every allowed value.

    ``example`` shows one valid reply; where the reply is held to the form anyway, the example is left out, since
    a small model copies it (SmolLM2 replied with the example's edit to every parent, too hard or too easy).
    ``operators``: the order the reply's operators are named in; a small model tends to take the first one named
    whatever the verdict, so each request names them in its own order (``operator_order``).
    """
    s = parent.summary
    played = (f"The agent wins {s.win_rate:.2f} of its plays without the hint and {s.win_rate_hint:.2f} with it "
              f"(regret {s.regret:.2f}; played in {s.times_played} round{'s' * (s.times_played != 1)})."
              if s is not None else "The agent has not played it yet.")

    def ladder(name: str, values: list[Any], current: Any = None) -> str:
        current = form.knobs.get(name, current)
        return f"  {name}: " + " ".join(f"[{v}]" if v == current else str(v) for v in values)

    own = form.own_level
    levels = sorted({*form.levels, *([own] if own is not None else [])})

    lines = [
        f"Game family: {space.family} ({space.skill}). {space.description}",
        played,
        f"Verdict: {verdict(s)}.",
        "",
        "harder sets difficulty knobs to values further right, easier to values further left "
        "(easiest first; [ ] marks the current value; level sets every knob at once to one of the game's levels):",
        *([ladder(LEVEL, levels, own)] if LEVEL in form.order and form.levels else []),
        *[ladder(name, knob.values) for name, knob in space.knobs.items() if len(knob.values) > 1],
        *(["vary sets variations to another value; the difficulty stays:"] if "vary" in form.options else []),
        *[ladder(name, [form.knobs[name], *form.options.get("vary", {}).get(name, [])])
          for name in space.dimensions if name in form.options.get("vary", {})],
        "",
        f"Change 1 to {form.max_changes} values with one operator. Reply with one JSON object: "
        '{"operator": ' + " or ".join(f'"{op}"' for op in operators if op in form.options)
        + ', "changes": {name: new value, ...}}'
        + (f", for example {form.example()}" if example else ""),
    ]
    return [{"role": "system", "content": EDIT_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def operator_order(key: str) -> list[str]:
    """The order one request names the operators in: a pure function of the candidate's id (so a run and its
    resume ask the same), and every order alike over many requests, so no operator gains by coming first."""
    return random.Random(f"operators:{key}").sample(list(OPERATORS), len(OPERATORS))


class EditWriter:
    """Makes edit-mode candidates for one designer (see the module docstring)."""

    def __init__(self, config: LLMDesignerConfig):
        self.config = config
        self._spaces: dict[str, EditSpace] = {}

    def space(self, family: str) -> EditSpace:
        if family not in self._spaces:
            self._spaces[family] = edit_space(family)
        return self._spaces[family]

    def form(self, parent: Parent) -> EditForm:
        asked = asked_operators(parent.summary) if self.config.directed else None
        return EditForm.of(self.space(parent.family), parent.knobs, self.config.max_changes, asked)

    async def propose(self, ask: Ask, parent: Parent, candidate: Candidate) -> Candidate:
        """Fill ``candidate`` (its id set) with the edit the model replies for ``parent``, or its refusal."""
        space, form = self.space(parent.family), self.form(parent)
        messages = edit_messages(parent, space, form, example=not self.config.constrained,
                                 operators=operator_order(candidate.candidate_id))
        candidate.notes = notes = EditNotes(mode="edit", parent=parent.key, group=parent.key,
                                            prompt=messages[-1]["content"])
        reply = await ask(messages, form if self.config.constrained else None, self.config.edit_max_tokens)
        notes.completion, notes.trace_ref = reply.text, reply.trace_ref
        edit = form.parse(reply.text)
        if isinstance(edit, EditRefused):
            candidate.refusal = edit.kind
            notes.refusal_reason = edit.reason
            return candidate
        family = get_family(parent.family)
        candidate.level = Level(family.render(edit.knobs), skill=family.skill, params=Params(family.name, dict(edit.knobs)),
                                lineage=Lineage(parents=[parent.env_id] if parent.env_id else [], operator=edit.operator,
                                                designer=candidate.lineage.designer, depth=parent.depth + 1))
        notes.edit, notes.before = edit.changes, {k: form.knobs[k] for k in edit.changes}
        notes.level, notes.named_operator = edit.level, edit.named_operator or None
        return candidate
