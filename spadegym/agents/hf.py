"""``hf:PATH`` as an agent: a local model plays through the rollout runner and learns from its episodes.

Each episode is one token sequence (``tokens.Trace``): the chat template
renders the first observation (and a tool-use level's tools, ``tools=``, when
the template shows them), the model's replies are kept as sampled, and
later observations are appended as chat turns. All live episodes of a turn
are generated in one batch (``lockstep``), and each episode keeps its keys and
values between turns (the policy's prefix cache), so a turn encodes only its
new tokens. Every reply carries the episode's trace reference, which the
runner keeps on the ``Episode``; after a round, ``update`` finds each
episode's sequence by it, turns returns into advantages
(z-scored within the plays of one environment instance and arm) and takes one
GRPO step through the policy's TRL trainer; observation tokens carry no loss.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..envfile import extract_action
from ..rollout.records import Episode
from ..signals.advantages import group_advantages
from ..train import Policy, Sample, Trace, TrainConfig
from .base import Reply, View
from .prompt import SYSTEM_PROMPT, system_message, user_message
from .tool_protocol import api_tools

SHORT_PROMPT = (
    "You are playing a text-based game. Answer with one action from the valid actions, inside \\boxed{}, "
    "and nothing else.\n\nExample. The game shows: \"sequence: 3, 6, 9, ? Valid actions: say 11, say 12, "
    "say 13.\" You answer: \\boxed{say 12}"
)
PROMPTS = {"reason": SYSTEM_PROMPT, "short": SHORT_PROMPT}


def forgiving_action(text: str, valid_actions: Sequence[str] | None) -> str | None:
    """The boxed action; failing that, for small models, the valid action the reply names.

    A box holding part of exactly one valid action (``\\boxed{23}`` for ``say 23``)
    counts as that action; a reply without a box counts as the valid action it
    names last. Otherwise the strict rule's answer stands.
    """
    boxed = extract_action(text)
    if not valid_actions:
        return boxed
    lowered = {a.lower(): a for a in valid_actions}
    if boxed is not None:
        if boxed.lower() in lowered:
            return lowered[boxed.lower()]
        word = re.compile(rf"(?<!\w){re.escape(boxed.lower())}(?!\w)") if boxed.strip() else None
        matches = [a for a in valid_actions if word and word.search(a.lower())]
        return matches[0] if len(matches) == 1 else boxed
    last, where = None, -1
    low = text.lower()
    for action in valid_actions:
        at = low.rfind(action.lower())
        if at > where or (at == where and last is not None and len(action) > len(last)):
            last, where = action, at
    return last if where >= 0 else None


def training_return(ep: Episode, config: TrainConfig) -> float:
    """The return GRPO sees: the episode's, plus the format and progress rewards (the loop's scores never see them)."""
    if not ep.turns:
        return ep.ret
    boxed = sum(1 for t in ep.turns if t.action is not None) / len(ep.turns)
    # The last reward of a terminated episode is its return; every earlier one is partial progress.
    partial = ep.turns[:-1] if ep.turns[-1].terminated else ep.turns
    return ep.ret + config.format_reward * boxed + config.progress_reward * sum(t.reward for t in partial)


class HFAgent:
    """A local Hugging Face model that plays (batched sampling) and learns by GRPO (TRL)."""

    keeps_history = True
    needs_valid_actions = False
    lockstep = True  # one generation batch for every live episode of a turn
    #: Hinted plays measure regret; they train only when the run sets train_on_hint.
    trains_on_hint = False

    def __init__(self, policy: Policy, config: TrainConfig | None = None):
        self.policy = policy
        self.config = config or policy.config
        self.name = f"hf:{policy.name}"
        self._refs = (f"agent-{n}" for n in itertools.count())  # opaque trace references, unique per agent
        self._live: dict[str, tuple[str, Trace]] = {}  # episode key -> (trace reference, trace)
        self._finished: dict[str, Trace] = {}  # trace reference -> trace of a finished, recorded episode
        self._recording = True
        self._greedy = False

    # -- acting -------------------------------------------------------------------
    async def act(self, views: list[View]) -> list[Reply]:
        chat = self.policy.chat
        refs, traces, replies = [], [], [None] * len(views)
        for i, view in enumerate(views):
            live = self._live.get(view.episode_key)
            message = user_message(view)
            if live is None:
                # A tool-use level's tools go through the chat template when it renders them (``tools=``);
                # otherwise their schemas are written into the system message.
                native = bool(view.tools) and chat.renders_tools
                system = system_message(view, PROMPTS[self.config.system_prompt], native_tools=native)
                trace = Trace(chat.prompt([system, message], tools=api_tools(view.tools) if native else None))
                live = self._live[view.episode_key] = (next(self._refs), trace)
            else:
                trace = live[1]
                trace.add_environment(chat.user_turn(message["content"]))
            if self.config.reply_prefix:  # given, not sampled: no loss on it
                trace.add_environment(chat.encode(self.config.reply_prefix))
            if len(trace) + self.config.max_new_tokens > self.config.max_seq_len:
                replies[i] = Reply(text="", action=None, error=(
                    f"the episode reached train.max_seq_len ({self.config.max_seq_len} tokens); "
                    "raise it or lower the environment's max_turns."), trace_ref=live[0])
            refs.append(live[0])
            traces.append(trace)
        todo = [i for i, r in enumerate(replies) if r is None]
        outs = self.policy.generate([traces[i].ids() for i in todo], self.config.max_new_tokens,
                                    keys=[refs[i] for i in todo], greedy=self._greedy)
        for i, (ids, logprobs) in zip(todo, outs):
            trace, view = traces[i], views[i]
            trace.add_sampled(ids, logprobs)
            if not ids or ids[-1] != chat.eos_id:
                trace.add_environment([chat.eos_id])  # the turn ends here; the model did not choose it
            text = self.config.reply_prefix + self.policy.tokenizer.decode(ids, skip_special_tokens=True)
            action = (forgiving_action(text, view.valid_actions) if self.config.action_rule == "forgiving"
                      else extract_action(text))
            replies[i] = Reply(text=text, action=action, tokens={"prompt": len(trace) - len(ids),
                                                                 "completion": len(ids)}, trace_ref=refs[i])
        return replies  # type: ignore[return-value]

    def end_episodes(self, keys: list[str]) -> None:
        for key in keys:
            live = self._live.pop(key, None)
            if live is None:
                continue
            self.policy.forget([live[0]])
            if self._recording:
                self._finished[live[0]] = live[1]

    async def aclose(self) -> None:
        self.policy.close()  # a generation server the policy started ends with the run

    @contextmanager
    def evaluating(self, seed: int, greedy: bool = False) -> Iterator[HFAgent]:
        """Play on the policy's evaluation random stream (``greedy``: the most likely tokens instead);
        these episodes are never trained on."""
        recording, self._recording = self._recording, False
        was_greedy, self._greedy = self._greedy, greedy
        try:
            with self.policy.evaluating(seed):
                yield self
        finally:
            self._recording, self._greedy = recording, was_greedy

    # -- learning -----------------------------------------------------------------
    def samples(self, episodes: Sequence[Episode]) -> list[Sample]:
        """The loop's episodes with their sequences (found by the trace reference each carries) and
        group-relative advantages."""
        found = [(ep, self._finished.pop(ep.trace_ref, None)) for ep in episodes if ep.trace_ref is not None]
        matched = [(ep, trace) for ep, trace in found if trace is not None]
        self._finished = {}  # sequences of episodes not handed back (failed ones) are not trained on
        returns = [training_return(ep, self.config) for ep, _ in matched]
        groups = [(ep.env_id, ep.group, ep.seed, ep.hinted) for ep, _ in matched]
        advantages = group_advantages(returns, groups)
        return [Sample(trace, float(a), "agent", reward=float(ep.ret))
                for (ep, trace), a in zip(matched, advantages)]

    def update(self, episodes: Sequence[Episode]) -> dict[str, Any]:
        """One GRPO step on this round's episodes (``train.train_agent = false``: matched, not trained)."""
        samples = self.samples(episodes)
        stats: dict[str, Any] = {"agent_samples": len(samples),
                                 "agent_reward": _mean([s.reward for s in samples])}
        if self.config.train_agent and samples:
            stats.update({f"agent_{k}": v for k, v in self.policy.update(samples).items()})
        stats["tokens_sampled_total"] = self.policy.tokens["sampled"]
        return stats

    def save(self, directory: Any) -> Any:
        return self.policy.save(directory)

    def restore(self, directory: Any) -> None:
        self.policy.load(directory)


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None
