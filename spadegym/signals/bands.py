"""Win-rate bands, each in one place with the one thing it means.

A win rate is read three ways: whether the agent can learn from a level (the
summary's band fraction, the report's band), where a level sits for the
designer (frontier, mastered, hopeless, too hard: in its context and in the LLM
designer's memory), and what the band reward pays for (``rewards.band``).
"""

from __future__ import annotations

#: Levels the agent wins sometimes but not always: the summary's "band fraction".
LEARNABLE = (0.2, 0.8)

#: Levels the designer is shown as the frontier to vary (no-hint win rate inside).
FRONTIER = (0.15, 0.85)
#: Above it a level is mastered: the designer is shown it as too easy.
MASTERED = 0.9
#: Below it (with the hint) a level is hopeless: the designer is shown it as too hard.
HOPELESS = 0.1
#: Below it (without the hint) a level the LLM designer remembers is an example of what to avoid.
TOO_HARD = 0.1

#: The band reward's plateau (full reward inside), and the distance over which it falls to 0.
PLATEAU = (0.4, 0.6)
PLATEAU_FALLOFF = 0.25
