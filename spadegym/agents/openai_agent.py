"""The LLM agent: any OpenAI-compatible chat server plays the game.

Each episode is one conversation (``keeps_history=True``: the runner puts the
hint line into the first observation of the hint arm). The agent keeps the
messages it sent per episode and appends to them, so every request extends
the previous one token for token and the server's prefix cache stays warm.

The action is the contract's ``extract_action`` applied to the reply's content
(``<think>`` blocks removed; when the server splits out ``reasoning_content``
the action is read from the content only). Nothing here raises on a bad
reply: an unparseable reply is ``Reply(action=None)`` (a format failure the
runner counts), a server problem is ``Reply(error=...)`` with one sentence
naming the URL (an ``agent`` failure, never a loss).

Tool-use levels: the level's tools go out as the API's ``tools``
(``native_tools``), and the reply's ``tool_calls`` come back as the
reference's ``<tool_call>`` blocks in its text (``tool_protocol``), the action
being the first call; the next observation answers them as ``tool`` messages.
A model that writes ``<tool_call>{json}</tool_call>`` itself is read the same
way. A server that refuses requests with ``tools`` (one started without a tool
parser) is asked again without them, and the agent keeps to the text
protocol from then on. With
``stop_on_unavailable`` the batch that met an unreachable server raises
``LLMUnavailable`` instead, so a caller stops once, with that sentence.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import openai

from ..envfile import extract_action, strip_thinking
from ..llm import EndpointConfig, LLMClient, LLMError, LLMUnavailable
from .base import Reply, View
from .openai_config import OpenAIAgentConfig
from .prompt import assistant_message, system_message, tool_messages, user_message
from .tool_protocol import api_tools, call_action, calls_text, history_calls


class OpenAIAgent:
    """Plays through chat completions; one request per live episode per turn, concurrently."""

    keeps_history = True
    needs_valid_actions = False
    #: Episodes are independent requests: the runner lets each take its next turn as soon as
    #: its reply is back instead of waiting for the whole batch (slow replies delay only themselves).
    lockstep = False

    def __init__(self, endpoint: EndpointConfig, config: OpenAIAgentConfig | None = None,
                 client: LLMClient | None = None):
        self.endpoint = endpoint
        self.config = config or OpenAIAgentConfig()
        self.client = client or LLMClient(endpoint)
        self.name = f"openai:{endpoint.model}"
        self._messages: dict[str, list[dict[str, Any]]] = {}
        self._started: dict[str, float] = {}
        self._pending_calls: dict[str, list[str]] = {}  # episode key -> ids of native calls awaiting output
        self._native = self.config.native_tools  # False once the server refused a request with tools

    @property
    def usage(self) -> dict[str, int]:
        """Tokens used so far by this agent (prompt and completion)."""
        return dict(self.client.usage)

    def messages_for(self, view: View) -> list[dict[str, Any]]:
        """The conversation to send for this view (the episode's earlier turns kept verbatim)."""
        messages = self._messages.get(view.episode_key)
        if messages is None:
            messages = [system_message(view, self.config.system_prompt, native_tools=self._native)]
            # An agent that joins mid-episode rebuilds the conversation from the view.
            for observation, reply in view.history:
                messages.append(user_message(View(view.episode_key, observation)))
                messages.append(assistant_message(strip_thinking(reply).strip()))
            self._messages[view.episode_key] = messages
        pending = self._pending_calls.pop(view.episode_key, None)
        messages.extend(tool_messages(view, pending) if pending else [user_message(view)])
        return messages

    async def _chat(self, view: View, messages: list[dict[str, Any]]) -> Any:
        """One completion; a tool-use level's tools travel as the API's ``tools`` while the server takes them."""
        tools = api_tools(view.tools) if self._native and view.tools else []
        if not tools:
            return await self.client.chat(messages)
        try:
            return await self.client.chat(messages, tools=tools)
        except LLMUnavailable:
            raise
        except LLMError:  # refused with tools (no tool parser): the text protocol carries them from now on
            self._native = False
            messages[0] = system_message(view, self.config.system_prompt)
            return await self.client.chat(messages)

    async def _one(self, view: View) -> tuple[Reply, LLMUnavailable | None]:
        started = self._started.setdefault(view.episode_key, time.monotonic())
        messages = self.messages_for(view)
        budget = self.config.episode_timeout_s
        left = None if budget is None else budget - (time.monotonic() - started)
        try:
            if left is not None and left <= 0:
                raise TimeoutError
            result = await asyncio.wait_for(self._chat(view, messages), timeout=left)
        except (TimeoutError, asyncio.TimeoutError):  # distinct classes before Python 3.11
            return Reply(text="", action=None, error=(
                f"the episode used up its {budget:g}s budget for calls to the model server at "
                f"{self.endpoint.base_url}; raise episode_timeout_s or use a faster server.")), None
        except LLMUnavailable as exc:
            return Reply(text="", action=None, error=str(exc)), exc
        except LLMError as exc:
            return Reply(text="", action=None, error=str(exc)), None
        except openai.OpenAIError as exc:  # anything else the SDK raises still names the server
            return Reply(text="", action=None, error=(
                f"the model server at {self.endpoint.base_url} gave an unusable reply ({type(exc).__name__}).")), None
        content = result.text or ""
        calls = result.tool_calls if view.tools else []
        messages.append(assistant_message(strip_thinking(content).strip(), history_calls(calls)))
        if calls:
            self._pending_calls[view.episode_key] = [c["id"] for c in calls]
            content = f"{content.rstrip()}\n{calls_text(calls)}".lstrip()
        # Transcripts keep the split-out reasoning in a <think> block, which extraction ignores.
        text = f"<think>{result.reasoning}</think>\n{content}" if result.reasoning else content
        action = call_action(calls) or extract_action(content)
        return Reply(text=text, action=action, tokens=dict(result.usage)), None

    async def act(self, views: list[View]) -> list[Reply]:
        if len(views) == 1:  # the runner's usual call (lockstep=False): no task to make and schedule
            outcomes = [await self._one(views[0])]
        else:
            outcomes = await asyncio.gather(*(self._one(view) for view in views))
        if self.config.stop_on_unavailable:
            for _, unavailable in outcomes:
                if unavailable is not None:
                    raise unavailable
        return [reply for reply, _ in outcomes]

    def end_episodes(self, keys: list[str]) -> None:
        for key in keys:
            self._messages.pop(key, None)
            self._started.pop(key, None)
            self._pending_calls.pop(key, None)

    async def aclose(self) -> None:
        await self.client.aclose()
