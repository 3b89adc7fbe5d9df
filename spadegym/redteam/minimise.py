"""Shrink a failure to the simplest environment that still fails.

Built-in family levels shrink knob by knob (delta debugging over the knob
ladder): for each difficulty knob, try its easier values from the easiest up
and keep the first that still fails; repeat until no knob can be lowered. Files
written by a model get "make it simpler, keep the failure" turns from the same
model; each answer passes the gate again and is kept only if it is shorter and
still fails. The suite keeps the minimal form beside the original.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..families import FREE_KNOBS, get_family
from ..llm.client import ChatClient, LLMError
from .probe import Probe

#: source, hint -> the probe of that version against the target, and whether it still fails.
Judge = Callable[[str, "str | None"], Awaitable[tuple[Probe, bool]]]

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
    """How far a level sits above its family's easiest one: the sum of its knob level indices."""
    index = get_family(family).level_index(knobs)
    return sum(v for k, v in index.items() if k not in FREE_KNOBS)


def code_size(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


async def shrink_level(family_name: str, knobs: dict[str, Any], probe: Probe, judge: Judge) -> Minimal:
    """Lower one knob at a time, easiest value first, while the level still fails."""
    family = get_family(family_name)
    current = family.check_knobs(knobs)
    best = Minimal(probe.source, dict(current), probe, size=level_size(family_name, current))
    changed = True
    while changed:
        changed = False
        for name in family.ladders:
            levels = family.ladder(name)  # listed levels and the extension a search may have climbed into
            at = levels.index(current[name])
            for easier in dict.fromkeys(levels[:at]):  # easiest first; clipped ladders repeat values
                if easier == current[name]:
                    continue
                trial = {**current, name: easier}
                source = family.render(trial)
                tried, fails = await judge(source, None)
                best.steps.append({"knob": name, "from": current[name], "to": easier, "still_fails": fails,
                                   "level": trial})
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
        tried, fails = await judge(code, hint)
        best.steps.append({"simplify": f"{best.size} -> {code_size(code)} lines", "valid": tried.valid,
                           "still_fails": fails})
        if fails:
            best = Minimal(code, {}, tried, best.steps, code_size(code))
    return best
