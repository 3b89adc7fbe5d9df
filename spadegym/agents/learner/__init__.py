"""The built-in CPU learner: hashed features, a small numpy scorer, GRPO-style training.

>>> learner = make_learner()            # fresh (agent spec ``learner``)
>>> learner = make_learner("ckpt/")     # from a checkpoint (``learner:ckpt/``)   # doctest: +SKIP
"""

from .agent import CheckpointError, Learner, LearnerConfig, make_learner
from .features import Featurizer, ViewFeatures
from .grpo import group_advantages
from .trainer import CurvePoint, evaluate, evaluate_async, train, train_async

__all__ = [
    "CheckpointError", "CurvePoint", "Featurizer", "Learner", "LearnerConfig", "ViewFeatures",
    "evaluate", "evaluate_async", "group_advantages", "make_learner", "train", "train_async",
]
