"""Where a level sits on its family's knob ladders: 0 at the easiest settings, 1 at the hardest listed ones
(above 1 past them, on a family's extension)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .imported import imported_knobs
from .registry import FREE_KNOBS, get_family


def difficulty_index(family_name: str | None, knobs: dict[str, Any]) -> float | None:
    """Where ``knobs`` sit between the family's easiest (0) and hardest listed (1) settings; None without a family."""
    if not family_name:
        return None
    try:
        family = get_family(family_name)
        ladders = {name: family.ladder(name) for name in family.ladders}
        listed = family.ladders
    except ValueError:
        ladders = imported_knobs(family_name)  # an imported family (a reasoning-gym task) has ladders too
        if ladders is None:
            return None
        listed = ladders
    positions = []
    for name, levels in ladders.items():
        if len(listed[name]) < 2 or name in FREE_KNOBS or name not in knobs:
            continue
        try:
            positions.append(levels.index(knobs[name]) / (len(listed[name]) - 1))
        except ValueError:
            continue
    return float(np.mean(positions)) if positions else 0.0
