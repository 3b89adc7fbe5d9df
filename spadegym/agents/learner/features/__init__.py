"""Hashed features of an observation and its candidate actions.

The scorer sees two sparse vectors per (observation, action) pair: the
observation's features, shared by all actions of a view (``observation``),
and the pair's: the action's own words (``actions``), how much of it each
labelled line names (``overlap``), which labelled line it refers to
(``references``), and every tagged observation word crossed with every action
word (``featurizer``). Each feature's index is a stable hash (``hashing``), so
features are the same in every process.
"""

from .disguise import Disguise
from .featurizer import VIEW_ENTRIES, Featurizer, ViewFeatures
from .hashing import Entries, Kind, mix, token_hash
from .overlap import hint_rule_rows

__all__ = ["VIEW_ENTRIES", "Disguise", "Entries", "Featurizer", "Kind", "ViewFeatures", "hint_rule_rows", "mix", "token_hash"]
