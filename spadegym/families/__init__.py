"""Built-in environment families: parameterized games rendered as standalone files.

    from spadegym.families import get_family, list_families
    family = get_family("grid_maze")
    source = family.render(family.level_knobs(0))
"""

from .registry import (
    COMMON_KNOBS,
    FREE_KNOBS,
    Family,
    FamilyError,
    get_family,
    list_families,
    new_environment,
    register_family,
)

__all__ = ["COMMON_KNOBS", "FREE_KNOBS", "Family", "FamilyError", "get_family", "list_families",
           "new_environment", "register_family"]
