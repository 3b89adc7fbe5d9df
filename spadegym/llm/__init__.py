"""OpenAI-compatible model access shared by the LLM agent and the LLM designer."""

from .client import ChatResult, EndpointConfig, LLMClient, LLMError, LLMReplyError, LLMUnavailable, parse_spec

__all__ = ["ChatResult", "EndpointConfig", "LLMClient", "LLMError",
           "LLMReplyError", "LLMUnavailable", "parse_spec"]
