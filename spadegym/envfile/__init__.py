"""The environment file contract (see ``contract`` for the documented interface)."""

from .contract import (
    HINT_PREFIX,
    REWARD_LIMIT,
    ContractError,
    ResetResult,
    StepResult,
    clip_reward,
    episode_return,
    extract_action,
    hint_line,
    is_success,
    normalize_reset,
    normalize_step,
    strip_thinking,
    with_hint,
)
from .static import EnvFileInfo, SourceError, inspect_source, normalized_code_hash, read_source

__all__ = [
    "HINT_PREFIX", "REWARD_LIMIT", "ContractError", "EnvFileInfo", "ResetResult", "SourceError",
    "StepResult", "clip_reward", "episode_return", "extract_action", "hint_line", "inspect_source",
    "is_success", "normalize_reset", "normalize_step", "normalized_code_hash", "read_source",
    "strip_thinking", "with_hint",
]
