"""``hf:PATH`` as a designer: the LLM designer's prompts, repairs and hints, written by a local model that learns.

The designer is spadegym's LLM designer (corpus grounding, memory, code
extraction, repair turns, leak-checked hints) with a local chat client in
place of the server: concurrent chat calls of one ``propose`` are generated
in one batch, and each call's token sequence is kept. When the loop reports
the designer rewards (``update``), the first completion of each candidate
(the environment file it is rewarded for; invalid ones earn less than any
valid one) becomes a GRPO sample; advantages are the rewards z-scored within
each skill (in the edit modes: within the edits of each parent), and the
step goes through the policy's TRL trainer, after ``designer_delay`` rounds
when set. In edit mode the completion is held to the edit's form by a grammar
over the model's tokens (``edit_grammar``), and only the tokens the model chose
carry loss.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from ..llm.client import ChatClient, ChatResult, EndpointConfig
from ..signals.advantages import group_advantages
from ..train import Policy, Sample, Trace, TrainConfig
from .base import Candidate, DesignContext, Feedback
from .edit_form import EditForm
from .edit_grammar import EditDecoder, EditRow, Vocabulary
from .edit_mode import Message
from .llm import LLMDesigner, LLMDesignerConfig
from .notes import EditNotes, ModelNotes


class LocalChatClient:
    """The chat-client face of a ``Policy``: concurrent ``chat`` calls are generated in one batch."""

    def __init__(self, policy: Policy, max_tokens: int):
        self.policy = policy
        self.max_tokens = max_tokens
        self.usage: Counter[str] = Counter()
        self.traces: dict[str, Trace] = {}  # trace reference (ChatResult.trace_ref) -> the completion's sequence
        self._pending: list[tuple[list[int], int, EditRow | None, asyncio.Future]] = []
        self._refs = itertools.count()

    async def chat(self, messages: list[dict[str, str]], **overrides: Any) -> ChatResult:
        """One completion (the policy's temperature; ``max_tokens`` capped by the designer's setting).

        ``constraint`` (an ``EditRow``) holds the completion to an edit's form; the tokens it forced carry no loss.
        """
        prompt = self.policy.chat.prompt(messages)
        limit = min(int(overrides.get("max_tokens") or self.max_tokens), self.max_tokens)
        constraint: EditRow | None = overrides.get("constraint")
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        if not self._pending:  # the first caller of this tick flushes after the others have queued
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append((prompt, limit, constraint, future))
        ids, logprobs = await future
        trace = Trace(prompt)
        trained = None if constraint is None else [int(not f) for f in constraint.forced[:len(ids)]]
        trace.add_sampled(ids, logprobs, trained)
        text = self.policy.tokenizer.decode(ids, skip_special_tokens=True)
        ref = f"completion-{next(self._refs)}"
        self.traces[ref] = trace
        self.usage.update({"prompt_tokens": len(prompt), "completion_tokens": len(ids)})
        finish = "stop" if ids and ids[-1] == self.policy.chat.eos_id else "length"
        return ChatResult(text=text, finish_reason=finish, usage={"prompt_tokens": len(prompt),
                                                                  "completion_tokens": len(ids)}, trace_ref=ref)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        by_limit: dict[int, list[tuple[list[int], EditRow | None, asyncio.Future]]] = {}
        for prompt, limit, constraint, future in pending:
            by_limit.setdefault(limit, []).append((prompt, constraint, future))
        for limit, calls in by_limit.items():
            constraints = [c for _, c, _ in calls]
            # Keyed rows share what their prompts begin with (a parent's edits repeat one prompt: encoded once).
            keys = [("designer", id(future)) for *_, future in calls]
            try:
                outs = self.policy.generate([p for p, _, _ in calls], limit, keys=keys,
                                            constraints=constraints if any(constraints) else None)
            except Exception as exc:  # the awaiting proposals see the error, not a hung future
                for *_, future in calls:
                    future.set_exception(exc)
                continue
            finally:
                self.policy.forget(keys)  # a designer completion never continues
            for (*_, future), out in zip(calls, outs):
                future.set_result(out)

    async def aclose(self) -> None:
        return None


@dataclass(frozen=True)
class Traced:
    """A candidate's first completion (what it trains on), its GRPO group and how far through the gate it got."""

    trace: Trace
    group: str
    progress: float


class HFDesigner(LLMDesigner):
    """The LLM designer on a local policy; its first completions train on the designer reward."""

    def __init__(self, policy: Policy, train: TrainConfig | None = None, *, config: LLMDesignerConfig | None = None,
                 **options: Any):
        self.policy = policy
        self.train = train or policy.config
        self._client: LocalChatClient | None = None
        super().__init__(EndpointConfig(model=f"hf:{policy.name}"), config=config,
                         client_factory=self._new_client, **options)
        self.name = f"hf:{policy.name}"
        self._traces: dict[str, Traced] = {}  # candidate id -> its first completion, GRPO group, gate progress
        self._waiting: deque[list[Sample]] = deque()  # delayed designer updates, oldest first
        self._decoders: dict[str, EditDecoder] = {}  # one per parent's form within a propose: its rows share a memo

    def _new_client(self) -> LocalChatClient:
        self._client = self.chat_client()  # a proposal's client: its completions are the traces trained on
        return self._client

    def chat_client(self) -> LocalChatClient:
        return LocalChatClient(self.policy, self.train.designer_max_new_tokens)

    async def propose(self, context: DesignContext) -> list[Candidate]:
        self._decoders.clear()
        candidates = await super().propose(context)
        traces = self._client.traces if self._client else {}
        for c in candidates:
            notes = c.notes
            trace = traces.get(notes.trace_ref or "") if isinstance(notes, ModelNotes) else None
            if trace is not None and c.candidate_id:
                # GRPO groups: the edits of one parent in the edit modes, a skill's files when writing
                group = (notes.group if isinstance(notes, EditNotes) else "") or c.skill
                self._traces[c.candidate_id] = Traced(trace, group,
                                                      gate_progress(c.verdict.to_dict() if c.verdict else None))
        return candidates

    async def _ask(self, client: ChatClient, messages: list[Message], form: EditForm | None,
                   max_tokens: int | None) -> ChatResult:
        """One reply; held to ``form`` by a grammar over the model's tokens (``edit_grammar``)."""
        overrides: dict[str, Any] = {"max_tokens": max_tokens} if max_tokens else {}
        if form is not None:
            key = f"{form.family}:{json.dumps(form.knobs, sort_keys=True)}"  # a parent's edits share its form
            if key not in self._decoders:
                self._decoders[key] = EditDecoder(form, Vocabulary.of(self.policy.tokenizer))
            overrides["constraint"] = self._decoders[key].row()
        return await client.chat(messages, **overrides)

    def update(self, feedback: list[Feedback]) -> dict[str, Any]:
        """Remember the scores (memory), then train on this round's first completions (or queue them)."""
        super().update(feedback)
        known = [(scored, self._traces.pop(scored.candidate_id))
                 for scored in feedback if scored.candidate_id in self._traces]
        self._traces.clear()  # a candidate never scored (not played) is not trained on
        shaping = self.train.designer_format_reward
        rewards = [scored.reward + (0.0 if scored.valid else shaping * traced.progress) for scored, traced in known]
        advantages = group_advantages(rewards, [traced.group for _, traced in known])
        samples = [Sample(traced.trace, float(a), "designer", reward=r)
                   for (_, traced), a, r in zip(known, advantages, rewards)]
        stats: dict[str, Any] = {"designer_samples": len(samples),
                                 "designer_valid_rate": _mean([float(scored.valid) for scored, _ in known]),
                                 "designer_reward": _mean(rewards),
                                 "designer_gate_progress": _mean([traced.progress for _, traced in known])}
        if not self.train.train_designer:
            return stats
        self._waiting.append(samples)
        if len(self._waiting) > self.train.designer_delay:
            due = self._waiting.popleft()
            if due:
                stats.update({f"designer_{k}": v for k, v in self.policy.update(due).items()})
        return stats

    def save(self, directory: Any) -> Any:
        return self.policy.save(directory)

    def restore(self, directory: Any) -> None:
        self.policy.load(directory)


def gate_progress(verdict: dict[str, Any] | None) -> float:
    """The share of the gate's checks a candidate passed (0 without code): how close an invalid file came."""
    checks = (verdict or {}).get("checks") or []
    return sum(bool(c.get("passed")) for c in checks) / len(checks) if checks else 0.0


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None
