"""The environment file contract (see ``contract`` for the documented interface)."""

from .contract import (
    HINT_PREFIX,
    REWARD_LIMIT,
    ContractError,
    OptionalMethods,
    ResetResult,
    StepResult,
    ToolCall,
    clip_reward,
    episode_return,
    extract_action,
    hint_line,
    is_success,
    normalize_reset,
    normalize_step,
    normalize_tool_result,
    normalize_tools,
    parse_tool_call,
    strip_thinking,
    tool_name,
    with_hint,
)
from .folder import read_source
from .static import EnvFileInfo, SourceError, inspect_source, normalized_code_hash

__all__ = [
    "HINT_PREFIX", "REWARD_LIMIT", "ContractError", "EnvFileInfo", "OptionalMethods", "ResetResult", "SourceError",
    "StepResult", "ToolCall", "clip_reward", "episode_return", "extract_action", "hint_line", "inspect_source",
    "is_success", "normalize_reset", "normalize_step", "normalize_tool_result", "normalize_tools", "normalized_code_hash",
    "parse_tool_call", "read_source", "strip_thinking", "tool_name", "with_hint",
]
