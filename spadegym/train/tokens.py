"""Conversations as the token sequences that were sampled and are trained.

An episode is one growing sequence of token ids. The first observation is
rendered through the model's chat template once (the prompt); after that the
model's sampled ids are appended exactly as sampled, and each new observation
is appended as the ids of its chat turn (the template's text between the end
of a reply and the start of the next one). The next turn is generated from
that very sequence, and the trainer scores that very sequence: nothing is
re-templated, so what is trained is what was sampled.

``Trace`` keeps the ids with a mask (1: sampled by the model, trained; 0:
the environment's tokens, no loss) and the sampling log-probabilities.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any


class ChatTokens:
    """Chat-template arithmetic for one tokenizer: prompts and the ids of a new user turn."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.eos_id: int = tokenizer.eos_token_id
        self._marker = self._turn_marker()

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt(self, messages: list[dict[str, str]], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """The ids of a conversation up to the start of the model's reply; ``tools`` (OpenAI function
        schemas) rendered by the template, as TRL and transformers pass them (``tools=``)."""
        extra = {"tools": tools} if tools else {}
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **extra)
        return self.encode(text)

    @functools.cached_property
    def renders_tools(self) -> bool:
        """Whether the chat template shows the ``tools`` it is given (many small models' templates ignore them)."""
        probe = [{"type": "function", "function": {"name": "spadegym_probe_tool", "description": "",
                                                   "parameters": {"type": "object", "properties": {}}}}]
        try:
            text = self.tokenizer.apply_chat_template([{"role": "user", "content": "a"}], tools=probe,
                                                      tokenize=False, add_generation_prompt=True)
        except Exception:  # noqa: BLE001 - a template that cannot take tools does not render them
            return False
        return "spadegym_probe_tool" in text

    def _turn_marker(self) -> str:
        """The template's text after a reply's end-of-turn token (e.g. ChatML's newline)."""
        base = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        text = self.tokenizer.apply_chat_template(base, tokenize=False)
        eos = self.tokenizer.eos_token or ""
        cut = text.rfind(eos) if eos else -1
        return text[cut + len(eos):] if cut >= 0 else ""

    def user_turn(self, content: str) -> list[int]:
        """The ids that follow a finished reply: the user's message, then the start of the next reply."""
        base = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        before = self.tokenizer.apply_chat_template(base, tokenize=False)
        after = self.tokenizer.apply_chat_template(base + [{"role": "user", "content": content}],
                                                   tokenize=False, add_generation_prompt=True)
        if not after.startswith(before):
            raise ValueError("this chat template rewrites earlier turns; spadegym cannot append to it")
        return self.encode(self._marker + after[len(before):])


@dataclass
class Trace:
    """One conversation's ids: the prompt, then replies (trained) and observations (masked)."""

    prompt: list[int]
    completion: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)  # per completion token: 1 sampled, 0 environment
    logprobs: list[float] = field(default_factory=list)  # sampling log-probs (0.0 for masked tokens)

    def ids(self) -> list[int]:
        return self.prompt + self.completion

    def __len__(self) -> int:
        return len(self.prompt) + len(self.completion)

    def add_sampled(self, ids: list[int], logprobs: list[float], trained: list[int] | None = None) -> None:
        """Sampled tokens; ``trained`` (1/0 per token) leaves out of the loss those a constraint forced."""
        self.completion += ids
        self.mask += list(trained) if trained is not None else [1] * len(ids)
        self.logprobs += logprobs

    def add_environment(self, ids: list[int]) -> None:
        self.completion += ids
        self.mask += [0] * len(ids)
        self.logprobs += [0.0] * len(ids)

    @property
    def sampled_tokens(self) -> int:
        return sum(self.mask)


@dataclass
class Sample:
    """A trace with the advantage it earned and the role that produced it."""

    trace: Trace
    advantage: float
    role: str  # "agent" or "designer"
    reward: float = 0.0
