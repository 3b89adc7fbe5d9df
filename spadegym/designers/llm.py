"""The LLM designer: any OpenAI-compatible model writes environments, grounded and remembered.

One proposal, start to end::

    corpus document + memory ─► design prompt ─► reply ─► extract + brace repair
        ─► validation gate ─(invalid: failed checks sent back, up to ``repair_turns``)
        ─► hint call ─► leak check (a leaking hint is rewritten once, else refused)
        ─► Candidate

``propose`` runs ``context.count`` proposals concurrently and returns one
candidate per proposal, valid or not: every candidate carries its
``verdict`` (the gate's, or a verdict-shaped record when the reply held no
code) and its ``refusal`` (None, or why it is not usable: ``no_code``,
``declined``, ``invalid``, ``hint_leak``, ``bad_reply``: the server's reply broke
a bound, ``llm.client``). The loop keeps the rejected ones
with their verdicts and gives them a designer reward below any valid one. A
candidate that needed repair turns has ``attempts > 1``; with
``reward_first_attempt`` (the default) it is marked ``reward_as_invalid``.

The loop feeds the memory either through ``update(feedback)`` (with
``details`` holding ``win_rate``, ``regret`` and optionally ``env_id``) or
through ``context.frontier / mastered / hopeless``; both work.

That is the ``write`` mode (``LLMDesignerConfig.mode``). In ``edit`` mode the
model changes a parent level's knobs and variations (``edit_mode``), in
``code_edit`` mode its source (``code_edit``); both leave the verdict to the
judge, and the hint to the file's own.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..envfile import inspect_source, strip_thinking
from ..figures import finite_or_none
from ..llm.client import (
    ChatClient,
    ChatResult,
    EndpointConfig,
    LLMClient,
    LLMError,
    LLMReplyError,
    LLMUnavailable,
)
from ..validate.verdict import Verdict
from . import prompts
from .base import Candidate, DesignContext, Feedback, Level, Lineage
from .code_edit import CodeEditWriter
from .corpus import Corpus, Document, truncate_words
from .edit_form import EditForm
from .edit_mode import EditWriter, Message, Parent, plan_parents
from .extraction import extract_code
from .llm_config import LLMDesignerConfig
from .memory import DesignerMemory, MemoryEntry, code_excerpt
from .notes import EditNotes, ModelNotes, WriteNotes, notes_as

#: Where the designer's files are validated (a run's executor): (code, hint or None, file name) -> the gate's verdict.
Validator = Callable[[str, "str | None", str], Verdict]

REFUSAL_REASONS = ("no_code", "declined", "invalid", "hint_leak", "bad_reply")
#: A reply larger, deeper or slower than the client reads: that proposal fails, the run goes on.
BAD_REPLY = "bad_reply"


@dataclass
class DesignerStats:
    """Counts over the designer's life (persisted with its state)."""

    proposals: int = 0
    valid: int = 0
    valid_first_attempt: int = 0
    repaired: int = 0  # valid only after at least one repair turn
    repair_turns: int = 0
    hints_rewritten: int = 0
    edits: int = 0  # edit and code_edit modes: replies read as a change of their parent
    refused: dict[str, int] = field(default_factory=dict)
    fixes: dict[str, int] = field(default_factory=dict)  # mechanical extraction repairs

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def verdict_feedback(verdict: Verdict) -> str:
    """The failed checks for a repair prompt (their names where they carry no message)."""
    text = verdict.feedback()
    if text.strip():
        return text
    return "\n".join(f"- {c.name}" for c in verdict.failed) or f"- the environment was rejected ({verdict.category})."


def is_hint_leak(verdict: Verdict) -> bool:
    """The verdict fails only because of the hint (a leak check naming the hint)."""
    failed = verdict.failed
    return bool(failed) and all(c.category == "leak" and "hint" in c.name.lower() for c in failed)


def clean_hint(reply: str, max_words: int) -> str:
    text = strip_thinking(reply).strip().strip("`").strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    if text.lower().startswith("hint:"):
        text = text[5:].strip()
    text = text.strip("\"'“”").strip()
    words = text.split()
    return " ".join(words[:max_words])


class LLMDesigner:
    """Writes environments with a chat model; see the module docstring."""

    def __init__(self, endpoint: EndpointConfig, *, corpus: Corpus | None = None, seed: int = 0,
                 config: LLMDesignerConfig | None = None, sandbox: Any = None,
                 validation: Any = None, validator: Validator | None = None,
                 memory: DesignerMemory | None = None, client_factory: Callable[[], ChatClient] | None = None,
                 exclude_families: tuple[str, ...] | list[str] = ()):
        self.endpoint = endpoint
        # Makes the chat client of one propose call (default: the endpoint's OpenAI-compatible client).
        self._client_factory = client_factory or (lambda: LLMClient(self.endpoint))
        self.name = f"openai:{endpoint.model}"
        self.config = config or LLMDesignerConfig()
        self.corpus = corpus
        self.seed = seed
        self.memory = memory or DesignerMemory(capacity=self.config.memory_size)
        self.stats = DesignerStats()
        self.usage: Counter[str] = Counter()
        self._sandbox = sandbox
        self._own_sandbox = False
        self._validation = validation
        self._validator = validator
        self._counter = 0
        self._validating = threading.Lock()
        self._pending: OrderedDict[str, dict[str, str]] = OrderedDict()  # candidate id -> skill, excerpt
        self.exclude_families = tuple(exclude_families)  # edit modes never start from these (a run's unseen families)
        self._response_format = True  # edit mode asks for its JSON schema until the server refuses it
        self._writer: EditWriter | CodeEditWriter | None = None
        if self.config.mode == "edit":
            self._writer = EditWriter(self.config)
        elif self.config.mode == "code_edit":
            self._writer = CodeEditWriter(self.config)

    # --- the Designer protocol ------------------------------------------------------

    async def propose(self, context: DesignContext) -> list[Candidate]:
        for levels in (context.frontier, context.mastered, context.hopeless):
            self.memory.observe(levels)
        keys = list(range(self._counter, self._counter + context.count))
        self._counter += context.count
        parents: list[Parent] = []
        if self._writer is not None:
            rng = random.Random(f"{self.seed}:{context.round}:{keys[0] if keys else 0}")
            parents = plan_parents(context, self.config.edits_per_parent, rng, exclude=self.exclude_families)
        client = self._client_factory()
        try:
            if self._writer is None:
                tasks = [self._propose_one(client, context, key) for key in keys]
            else:
                tasks = [self._propose_change(client, parent, key) for parent, key in zip(parents, keys)]
            candidates = await asyncio.gather(*tasks)
        finally:
            await client.aclose()
        self.usage.update(client.usage)
        return list(candidates)

    def update(self, feedback: list[Feedback]) -> None:
        """Remember how the loop scored earlier candidates (``details``: win_rate, regret, env_id)."""
        for earned in feedback:
            known = self._pending.get(earned.candidate_id)
            if known is None or not earned.valid:
                continue
            details = earned.details or {}
            if details.get("win_rate") is None:
                continue  # nothing to learn about difficulty; context lists may still bring it
            self.memory.add(MemoryEntry(
                env_id=str(details.get("env_id") or earned.candidate_id), skill=known["skill"],
                code_excerpt=known["excerpt"], win_rate=_maybe_float(details.get("win_rate")),
                regret=_maybe_float(details.get("regret")), score=earned.reward))

    def state_dict(self) -> dict[str, Any]:
        return {"counter": self._counter, "memory": self.memory.state_dict(), "stats": self.stats.to_dict(),
                "pending": [[k, v] for k, v in self._pending.items()], "usage": dict(self.usage)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._counter = int(state.get("counter", 0))
        self.memory.load_state_dict(state.get("memory", {}))
        self.stats = DesignerStats(**state.get("stats", {}))
        self._pending = OrderedDict((k, v) for k, v in state.get("pending", []))
        self.usage = Counter(state.get("usage", {}))

    # --- the ModelDesigner protocol ---------------------------------------------------

    def report(self) -> dict[str, Any]:
        counted: dict[str, Any] = self.stats.to_dict()
        if self.usage:
            counted["usage"] = dict(self.usage)
        return counted

    def chat_client(self) -> ChatClient:
        return self._client_factory()

    def close(self) -> None:
        if self._own_sandbox and self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    # --- one proposal -----------------------------------------------------------------

    async def _propose_one(self, client: ChatClient, context: DesignContext, key: int) -> Candidate:
        started = time.perf_counter()
        candidate, messages = self._new_candidate(context, key)
        try:
            return await self._write(client, messages, candidate, started)
        except LLMReplyError as exc:
            return self._bad_reply(candidate, exc, started)

    def _new_candidate(self, context: DesignContext, key: int) -> tuple[Candidate, list[dict[str, str]]]:
        """A write-mode proposal before any reply, and the design request that asks for it."""
        cfg = self.config
        rng = random.Random(f"{self.seed}:{key}")
        document = self._document(rng)
        selection = self.memory.select(context.skill, cfg.frontier_examples, cfg.avoid_examples)
        picture = prompts.difficulty_picture(self.memory.skill_stats(context.skill), cfg.target_win_rate)
        messages = prompts.design_messages(
            context.skill, document=truncate_words(document.text, cfg.corpus_words) if document else None,
            memory=selection, picture=picture)
        candidate = Candidate(
            Level("", skill=context.skill, lineage=Lineage(operator="llm", designer=self.name)),
            candidate_id=f"llm-{self.seed}-{key:05d}",
            notes=WriteNotes(corpus_doc=document.doc_id if document else None, round=context.round,
                             prompt=messages[-1]["content"], memory_examples=[
                                 e.env_id for e in selection.frontier + selection.too_easy + selection.too_hard]))
        self.stats.proposals += 1
        return candidate, messages

    async def _write(self, client: ChatClient, messages: list[dict[str, str]], candidate: Candidate,
                     started: float) -> Candidate:
        """The reply to the design request, repaired, validated and hinted."""
        skill, notes = candidate.skill, notes_as(candidate.notes, WriteNotes)
        reply = await client.chat(messages)
        notes.completion = reply.text
        notes.trace_ref = reply.trace_ref  # the completion this candidate is rewarded for (a local model trains on it)
        extraction = extract_code(reply.text)
        self._count_fixes(extraction.fixes)
        if extraction.code is None:
            return self._refuse(candidate, extraction.refusal or "no_code", None, started)
        code, verdict = extraction.code, await self._check(extraction.code, None)
        notes.fixes = list(extraction.fixes)
        first_valid = bool(verdict.valid)
        if not first_valid:
            code, verdict = await self._repair(client, messages, reply, code, verdict, candidate)
        candidate.level = replace(candidate.level, source=code)
        repaired = candidate.attempts > 1 and bool(verdict.valid)
        notes.first_attempt_valid, notes.repaired = first_valid, repaired
        candidate.reward_as_invalid = repaired and self.config.reward_first_attempt
        if not verdict.valid:
            return self._refuse(candidate, "invalid", verdict, started)

        hint, verdict = await self._hint(client, code, verdict, candidate)
        if hint is None:
            return self._refuse(candidate, "hint_leak", verdict, started)
        candidate.level = replace(candidate.level, hint=hint or None)
        declared = inspect_source(code).skill
        if declared != skill:  # the file's SKILL says otherwise
            notes.declared_skill, notes.declares_other_skill = declared, True
        candidate.verdict = verdict
        notes.attempts, notes.seconds = candidate.attempts, round(time.perf_counter() - started, 3)
        self.stats.valid += 1
        self.stats.valid_first_attempt += first_valid
        self.stats.repaired += candidate.attempts > 1
        self._remember(candidate)
        return candidate

    async def _propose_change(self, client: ChatClient, parent: Parent, key: int) -> Candidate:
        """One edit (or code edit) of ``parent``; the judge validates it like any candidate."""
        assert self._writer is not None
        started = time.perf_counter()
        candidate = Candidate(Level("", skill=self._writer.space(parent.family).skill,
                                    lineage=Lineage(operator=self.config.mode, designer=self.name)),
                              candidate_id=f"llm-{self.seed}-{key:05d}")
        self.stats.proposals += 1

        async def ask(messages: list[Message], form: EditForm | None, max_tokens: int | None) -> ChatResult:
            return await self._ask(client, messages, form, max_tokens)

        try:
            candidate = await self._writer.propose(ask, parent, candidate)
        except LLMReplyError as exc:
            return self._bad_reply(candidate, exc, started)
        if candidate.refusal is not None:
            message = notes_as(candidate.notes, EditNotes).refusal_reason or ""
            candidate.verdict = Verdict.from_dict(_refusal_verdict(candidate.refusal, message))
            return self._refuse(candidate, candidate.refusal, candidate.verdict, started)
        self.stats.edits += 1
        notes_as(candidate.notes, EditNotes).seconds = round(time.perf_counter() - started, 3)
        return candidate

    async def _ask(self, client: ChatClient, messages: list[Message], form: EditForm | None,
                   max_tokens: int | None) -> ChatResult:
        """One reply; held to ``form``'s JSON schema (``response_format``) until the server refuses it."""
        overrides = {"max_tokens": max_tokens} if max_tokens else {}
        if form is not None and self._response_format:
            schema = {"type": "json_schema", "json_schema": {"name": "level_edit", "schema": form.schema()}}
            try:
                return await client.chat(messages, response_format=schema, **overrides)
            except (LLMUnavailable, LLMReplyError):  # the server is down, or it answered badly: not a refusal
                raise
            except LLMError:  # a server without structured outputs: ask plainly from now on
                self._response_format = False
                self.stats.fixes["response_format_refused"] = self.stats.fixes.get("response_format_refused", 0) + 1
        return await client.chat(messages, **overrides)

    async def _repair(self, client: ChatClient, messages: list[dict[str, str]], reply: ChatResult, code: str,
                      verdict: Verdict, candidate: Candidate) -> tuple[str, Verdict]:
        """Send the failed checks back until the code passes or the repair turns run out."""
        while not verdict.valid and candidate.attempts <= self.config.repair_turns:
            messages = messages + [{"role": "assistant", "content": _replayed(reply)},
                                   prompts.repair_request(verdict_feedback(verdict))]
            reply = await client.chat(messages)
            candidate.attempts += 1
            self.stats.repair_turns += 1
            fixed = extract_code(reply.text)
            self._count_fixes(fixed.fixes)
            if fixed.code is None:
                break  # the model gave up; keep the last code and its verdict
            code, verdict = fixed.code, await self._check(fixed.code, None)
            notes = notes_as(candidate.notes, WriteNotes)
            notes.fixes = (notes.fixes or []) + fixed.fixes
        return code, verdict

    async def _hint(self, client: ChatClient, code: str, verdict: Verdict,
                    candidate: Candidate) -> tuple[str | None, Verdict]:
        """A hint the leak check accepts ("" when the model writes none), or None when it keeps leaking."""
        cfg = self.config
        messages = prompts.hint_messages(code, cfg.hint_words)
        for attempt in range(cfg.hint_retries + 1):
            reply = await client.chat(messages, temperature=cfg.hint_temperature, max_tokens=cfg.hint_max_tokens)
            hint = clean_hint(reply.text, cfg.hint_words)
            if not hint:
                return "", verdict  # no hint: the loop falls back to the file's own hint()
            checked = await self._check(code, hint)
            if checked.valid:
                notes_as(candidate.notes, WriteNotes).hint_rewrites = attempt
                return hint, checked
            if not is_hint_leak(checked):
                return hint, verdict  # the code's own verdict stands; the hint was not the problem
            notes_as(candidate.notes, WriteNotes).leaking_hint = hint
            if attempt < cfg.hint_retries:
                self.stats.hints_rewritten += 1
                messages = messages + [{"role": "assistant", "content": hint},
                                       prompts.hint_retry_request(verdict_feedback(checked))]
            verdict = checked
        return None, verdict

    # --- pieces -------------------------------------------------------------------------

    def _document(self, rng: random.Random) -> Document | None:
        if self.corpus is None or self.config.corpus_words == 0:
            return None
        return self.corpus.sample(rng)

    async def _check(self, code: str, hint: str | None) -> Verdict:
        return await asyncio.to_thread(self._validate, code, hint)

    def _validate(self, code: str, hint: str | None) -> Verdict:
        with self._validating:  # one validation at a time: the sandbox is not shared across threads
            return self._validate_now(code, hint)

    def _validate_now(self, code: str, hint: str | None) -> Verdict:
        name = "llm_" + hashlib.sha256(code.encode()).hexdigest()[:10] + ".py"
        if self._validator is not None:
            return self._validator(code, hint, name)
        from ..validate import validate_source  # the gate: imported late, it pulls in the sandbox

        if self._sandbox is None:
            from ..sandbox import Sandbox

            self._sandbox, self._own_sandbox = Sandbox(), True
        return validate_source(code, name, hint=hint, sandbox=self._sandbox, config=self._validation)

    def _refuse(self, candidate: Candidate, reason: str, verdict: Verdict | None, started: float) -> Candidate:
        candidate.refusal = reason
        candidate.verdict = verdict if verdict is not None else Verdict.from_dict(_refusal_verdict(reason))
        notes = notes_as(candidate.notes, ModelNotes)
        notes.attempts, notes.seconds = candidate.attempts, round(time.perf_counter() - started, 3)
        self.stats.refused[reason] = self.stats.refused.get(reason, 0) + 1
        return candidate

    def _bad_reply(self, candidate: Candidate, exc: LLMReplyError, started: float) -> Candidate:
        """The proposal whose reply broke a bound: refused with the client's sentence, so the run goes on."""
        return self._refuse(candidate, BAD_REPLY, Verdict.from_dict(_refusal_verdict(BAD_REPLY, str(exc))), started)

    def _count_fixes(self, fixes: list[str]) -> None:
        for fix in fixes:
            self.stats.fixes[fix] = self.stats.fixes.get(fix, 0) + 1

    def _remember(self, candidate: Candidate) -> None:
        self._pending[candidate.candidate_id] = {"skill": candidate.skill,
                                                 "excerpt": code_excerpt(candidate.source)}
        while len(self._pending) > max(4 * self.config.memory_size, 64):
            self._pending.popitem(last=False)


def _refusal_verdict(reason: str, message: str = "") -> dict[str, Any]:
    """A verdict-shaped record for a reply that held nothing to validate, so every candidate carries one."""
    message = message or ("The reply declined the task and held no code." if reason == "declined"
                          else "The reply held no fenced Python block with an environment class.")
    check = "has_code" if reason in ("no_code", "declined") else "reply" if reason == BAD_REPLY else "edit_form"
    return {"file": "<reply>", "valid": False, "category": reason, "seconds": 0.0, "checks": [
        {"name": check, "passed": False, "message": message, "category": reason, "severity": "error"}]}


def _replayed(reply: ChatResult) -> str:
    """The assistant turn as the next request shows it (its thinking left out)."""
    return strip_thinking(reply.text).strip() or reply.text


_maybe_float = finite_or_none
