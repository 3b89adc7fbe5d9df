"""Designers write environments: the mutation designer over the built-in families, the LLM
designer (grounded on a corpus and a memory), and baseline samplers.

    from spadegym.designers import design, make_designer
    summary = design(make_designer("mutation", seed=0), 20, None, "pool/")
"""

from .base import SKILLS, Candidate, DesignContext, Designer, Feedback, LevelSummary, Lineage
from .design import DesignSummary, design
from .registry import DESIGNER_SPECS, UnknownDesigner, make_designer

__all__ = [
    "DESIGNER_SPECS", "SKILLS", "Candidate", "DesignContext", "DesignSummary", "Designer", "Feedback",
    "LevelSummary", "Lineage", "UnknownDesigner", "design", "make_designer",
]
