"""Built-in environment families: parameterized games rendered as standalone files.

    from spadegym.families import get_family, list_families
    family = get_family("grid_maze")
    source = family.render(family.level_knobs(0))
"""

from .difficulty import difficulty_index
from .registry import (
    COMMON_KNOBS,
    FREE_KNOBS,
    SKILLS,
    Family,
    FamilyError,
    get_family,
    list_families,
    new_environment,
    register_family,
)

# The package imports the skill modules, which register their families; the registry imports none of them.
from . import arithmetic, causal, deduction, optimization, patterns, spatial  # noqa: E402, F401  isort: skip

__all__ = ["COMMON_KNOBS", "FREE_KNOBS", "SKILLS", "Family", "FamilyError", "difficulty_index", "get_family",
           "list_families", "new_environment", "register_family"]
