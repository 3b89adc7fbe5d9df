"""The curriculum machinery: the level buffer and replay scheduling."""

from .buffer import BufferConfig, BufferState, LevelBuffer, LevelRecord, learning_progress

__all__ = ["BufferConfig", "BufferState", "LevelBuffer", "LevelRecord", "learning_progress"]
