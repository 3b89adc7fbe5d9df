"""A local language model that samples and learns: GRPO through TRL (``hf:PATH`` roles build on it).

``Policy`` holds the model, its tokenizer and a TRL ``GRPOTrainer``; ``Trace``
is one sampled conversation as token ids with its loss mask. The agent and
designer that use a policy live with the other agents and designers
(``agents.hf``, ``designers.hf``). torch, transformers and trl are imported
only when a policy is built.
"""

from .config import TrainConfig
from .policy import Policy
from .roles import PolicyPool, train_config
from .tokens import ChatTokens, Sample, Trace

__all__ = ["ChatTokens", "Policy", "PolicyPool", "Sample", "TrainConfig", "Trace", "train_config"]
