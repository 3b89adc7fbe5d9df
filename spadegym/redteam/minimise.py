"""Shrink a failure to the simplest environment that still fails.

Built-in family levels shrink knob by knob (delta debugging over the knob
ladder, its extension included): for each difficulty knob, try its easier
values from the easiest up and keep the first that still fails; then put each
variation dimension the target sees back to its default, kept if it still
fails; repeat until nothing changes. Knobs go first, so a failure that needs a
variation (a wording, a layout, shifted starts) shrinks to the easiest level
that still fails with it, and keeps it: the variation is the failure's cause
there, where resetting it first, at a level hard enough to fail anyway, would
lose it. A simpler level that would repeat a known failure is not tried (see
``shrink_level``). Files
written by a model get "make it simpler, keep the failure" turns from the same
model; each answer passes the gate again and is kept only if it is shorter and
still fails. The suite keeps the minimal form beside the original.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..families import get_family
from ..families.variation import DIMENSION_NAMES
from ..level import Params
from ..llm.client import ChatClient, LLMError
from .clusters import level_features
from .probe import Probe

#: source, hint, the family and knobs that rendered it (None: a written file) -> the probe of that version against
#: the target, and whether it still fails.
Judge = Callable[[str, "str | None", "Params | None"], Awaitable[tuple[Probe, bool]]]

SIMPLIFY_PROMPT = (
    "The environment below is valid and the agent under test fails it. Write a SIMPLER version of it: "
    "fewer rules, smaller numbers, less code, while keeping what makes the agent fail, and keeping it "
    "winnable (solution() must still win). Keep the same interface (reset, step, solution, hint). "
    "Reply with the whole file in one ```python block.\n\n```python\n{code}\n```"
)


@dataclass
class Minimal:
    """The smallest failing version found, and how it was reached."""

    source: str
    knobs: dict[str, Any]
    probe: Probe
    steps: list[dict[str, Any]] = field(default_factory=list)  # each tried version: what changed, did it still fail
    size: int = 0  # family levels: sum of knob level indices; files: non-blank lines of code


def level_size(family: str, knobs: dict[str, Any]) -> int:
    """How far a level sits above its family's easiest one: the sum of its knob level indices, plus one for
    each variation dimension it sets away from its default."""
    ladders, varied = level_features(family, knobs)
    return sum(ladders.values()) + len(varied)


def code_size(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def simpler_values(family_name: str, knobs: dict[str, Any]) -> dict[str, list[Any]]:
    """Per knob, the values that make a level simpler, in the order shrinking tries them: each difficulty
    knob's easier values (easiest first), then each varied dimension's default (``variant`` aside)."""
    family = get_family(family_name)
    current = family.check_knobs(knobs)
    out: dict[str, list[Any]] = {}
    for name in family.ladders:
        levels = family.ladder(name)  # listed levels and the extension a search may have climbed into
        easier = [v for v in dict.fromkeys(levels[:levels.index(current[name])]) if v != current[name]]
        if easier:
            out[name] = easier
    default = family.level_knobs(0)  # every dimension at its default; ``variant`` only picks the instances
    out.update({name: [default[name]] for name in DIMENSION_NAMES
                if name != "variant" and current.get(name, default[name]) != default[name]})
    return out


def one_step_simpler(family_name: str, knobs: dict[str, Any]) -> list[dict[str, Any]]:
    """The levels just below this one: each difficulty knob one value easier, or one varied dimension back to
    its default (the forms whose failure, or not, tells what this level's failure needs)."""
    current = get_family(family_name).check_knobs(knobs)
    return [{**current, name: values[-1]} for name, values in simpler_values(family_name, current).items()]


async def shrink_level(family_name: str, knobs: dict[str, Any], probe: Probe, judge: Judge,
                       explained: Callable[[dict[str, Any]], str | None] | None = None) -> Minimal:
    """Lower one knob at a time, easiest value first, then reset one dimension at a time, while the level still fails.

    ``explained`` names the known failure a simpler level would repeat (None if none): such a level is not
    tried, since its failure is a known one's and cannot tell what this failure needs. A level reaches the
    shrinker only when a won level lies between it and every known failure below it, so the form kept is
    where it fails above that won level: its own cause, not the known failure again.
    """
    family = get_family(family_name)
    current = family.check_knobs(knobs)
    best = Minimal(probe.source, dict(current), probe, size=level_size(family_name, current))
    changed = True
    while changed:
        changed = False
        for name, values in simpler_values(family_name, current).items():
            for simpler in values:
                trial = {**current, name: simpler}
                known = explained(trial) if explained else None
                if known is not None:
                    best.steps.append({"knob": name, "from": current[name], "to": simpler, "still_fails": None,
                                       "won": False, "explained_by": known, "level": trial})
                    continue
                source = family.render(trial)
                tried, fails = await judge(source, None, Params(family.name, trial))
                won = bool(tried.valid and tried.stats and tried.stats.plays and not fails)
                best.steps.append({"knob": name, "from": current[name], "to": simpler, "still_fails": fails,
                                   "won": won, "win_rate": tried.stats.win_rate if won else None, "level": trial})
                if fails:
                    current = trial
                    best = Minimal(source, dict(trial), tried, best.steps, level_size(family_name, trial))
                    changed = True
                    break
    return best


async def simplify_file(source: str, hint: str | None, probe: Probe, judge: Judge, client: ChatClient,
                        turns: int) -> Minimal:
    """Ask the model for simpler versions; keep each one that is shorter, valid and still failing.

    ``client`` is the designer's (``ModelDesigner.chat_client``); the caller closes it.
    """
    from ..designers.extraction import extract_code

    best = Minimal(source, {}, probe, size=code_size(source))
    for _ in range(turns):
        try:
            reply = await client.chat([{"role": "user", "content": SIMPLIFY_PROMPT.format(code=best.source)}])
        except LLMError as exc:
            best.steps.append({"simplify": "no reply", "error": str(exc)})
            break
        code = extract_code(reply.text).code
        if code is None or code_size(code) >= best.size:
            best.steps.append({"simplify": "no shorter code", "still_fails": None})
            continue
        tried, fails = await judge(code, hint, None)
        best.steps.append({"simplify": f"{best.size} -> {code_size(code)} lines", "valid": tried.valid,
                           "still_fails": fails})
        if fails:
            best = Minimal(code, {}, tried, best.steps, code_size(code))
    return best
