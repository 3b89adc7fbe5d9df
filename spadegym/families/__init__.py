"""Built-in environment families: parameterized games rendered as standalone files.

    from spadegym.families import get_family, list_families, edit_space
    family = get_family("grid_maze")
    source = family.render(family.level_knobs(0))
    space = edit_space("grid_maze")      # what a designer may change: knobs (extension included) and variations
"""

from .difficulty import difficulty_index
from .edits import Edit, EditSpace, edit_space
from .provenance import level_family, rendered_level, rendering_family
from .registry import (
    ALL_SKILLS,
    COMMON_KNOBS,
    FREE_KNOBS,
    SETTINGS,
    SKILLS,
    TOOL_SKILLS,
    Family,
    FamilyError,
    get_family,
    list_families,
    new_environment,
    register_family,
    setting_of,
)
from .variation import DIMENSIONS, Dimension, Extend

# The package imports the skill modules, which register their families; the registry imports none of them.
from . import arithmetic, causal, deduction, optimization, patterns, spatial, tool_use  # noqa: E402, F401  isort: skip

__all__ = ["ALL_SKILLS", "SETTINGS", "TOOL_SKILLS", "setting_of", "COMMON_KNOBS", "DIMENSIONS", "FREE_KNOBS", "SKILLS", "Dimension", "Edit", "EditSpace", "Extend", "Family",
           "FamilyError", "difficulty_index", "edit_space", "get_family", "list_families", "new_environment",
           "level_family", "register_family", "rendered_level", "rendering_family"]
