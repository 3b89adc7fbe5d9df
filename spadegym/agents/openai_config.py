"""How the LLM agent plays (the ``openai_agent`` section of a run's config); light to import."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .prompt import SYSTEM_PROMPT


class OpenAIAgentConfig(BaseModel):
    """How the LLM agent plays (the endpoint settings live in ``EndpointConfig``)."""

    model_config = {"extra": "forbid"}

    episode_timeout_s: float | None = Field(
        None, gt=0, description="Wall-clock budget of one episode's model calls; past it the episode ends as an agent failure.")
    stop_on_unavailable: bool = Field(
        True, description="Raise LLMUnavailable when the server cannot be reached, instead of failing episodes one by one.")
    system_prompt: str = Field(SYSTEM_PROMPT, description="The system message of every episode.")
    native_tools: bool = Field(
        True, description="Send a tool-use level's tools as the API's `tools` and read the reply's `tool_calls` "
                          "(the text protocol <tool_call>{json}</tool_call> is read either way); a server that "
                          "refuses them is asked again without.")
