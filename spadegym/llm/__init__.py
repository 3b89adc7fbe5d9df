"""OpenAI-compatible model access shared by the LLM agent and the LLM designer."""

from .client import ChatResult, EndpointConfig, LLMClient, LLMError, LLMReplyError, LLMUnavailable, parse_spec
from .fake_server import FakeOpenAIServer, FakeReply

__all__ = ["ChatResult", "EndpointConfig", "FakeOpenAIServer", "FakeReply", "LLMClient", "LLMError",
           "LLMReplyError", "LLMUnavailable", "parse_spec"]
