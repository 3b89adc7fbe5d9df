"""The built-in learner: a choice agent that scores valid actions and learns by GRPO.

It sees only the current observation (``keeps_history=False``, so in the hint
arm the runner appends the ``hint: <text>`` line to every observation) and
picks among ``valid_actions``. ``act`` scores all views of a turn in one
batched forward pass; ``update`` recomputes the features from the episodes'
transcripts (so episodes from a store or a replay buffer train it the same
way) and takes one Adam step per minibatch.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from ...envfile.contract import without_hint
from ...errors import UserError
from ...jsondata import UntrustedJSONError, loads
from ...rollout.records import Episode
from ..base import Reply, View
from .features import VIEW_ENTRIES, Disguise, Featurizer, hint_rule_rows
from .grpo import GroupKey, group_advantages, group_key, policy_gradient
from .minibatches import Minibatches
from .model import Scorer, make_batch
from .weights import WeightsError, read_weights

CHECKPOINT_FORMAT = 1
#: Largest views one update minibatch holds (in entries: this many times ``view_entries``).
BATCH_VIEWS = 64
#: Largest views an update keeps built for its later passes (about what a default round of built-in
#: families holds); past that it rebuilds minibatches when they are read.
KEPT_VIEWS = 512
CONFIG_FILE = "learner.json"
WEIGHTS_FILE = "weights.npz"
#: A decision an update trains on: (observation, valid actions, chosen index, weight).
Step = tuple[str, list[str], int, float]
#: Settings added after checkpoints were first written, at the value those checkpoints were trained with.
PREDATED = {"verb_free": False, "disguise": 0.0}
#: Far above any ``learner.json`` spadegym writes (settings, two counters, a random state).
META_BYTES = 1 << 20


class CheckpointError(UserError, ValueError):
    """A learner checkpoint cannot be read: the message says which file and what to do."""


class LearnerConfig(BaseModel):
    """Model size and optimisation settings of the learner."""

    model_config = {"extra": "forbid"}

    hash_bits: int = Field(16, ge=8, le=22, description="Feature hash space is 2**hash_bits rows.")
    hidden: int = Field(16, ge=1, le=1024, description="Hidden units of the scorer.")
    init_scale: float = Field(0.5, gt=0, description="Std of the initial embedding rows.")
    lr: float = Field(0.01, gt=0, description="Adam learning rate.")
    entropy_coef: float = Field(0.05, ge=0, description="Entropy bonus; much lower collapses the policy before it learns to use hints.")
    grad_clip: float = Field(1.0, gt=0, description="Global gradient-norm clip per Adam step.")
    minibatch_steps: int = Field(512, ge=1, description="Decisions per Adam step; larger updates are split.")
    epochs: int = Field(4, ge=1, le=32, description="Passes over each update's decisions (PPO-clipped after the first).")
    clip: float = Field(0.2, gt=0, description="PPO ratio clip for the passes after the first.")
    distill: float = Field(1.0, ge=0, description="Weight of imitating won hinted episodes on their no-hint observations.")
    hint_prior: float = Field(4.0, ge=0, description="Initial weight of the rules 'take the action the hint line writes out' and 'take the action whose telling words the hint names' (4: a fresh learner follows a hint as an instruction-following model would); 0 leaves them to be learnt from reward, which multi-step observer hints rarely teach (benchmarks/README.md).")
    verb_free: bool = Field(True, description="Reference features (the line an action names) also keyed without the action's verb and the line's noun, so they hold for the same game with its actions renamed (benchmarks/README.md).")
    disguise: float = Field(0.25, ge=0, le=1, description="Share of an update's groups of plays whose decisions (those with an advantage, and imitations) are also trained on a copy with words renamed to nonsense (each word with probability `disguise_words`, the same way throughout the group), so the learner learns to play games whose words it never saw (benchmarks/README.md); 0: none.")
    disguise_words: float = Field(0.5, ge=0, le=1, description="Chance that a word of a disguised group's plays is renamed.")
    cache_entries: int = Field(8_000_000, ge=0, description="Feature cache budget in stored entries (~12 bytes each): the default (~96 MB) holds the views of a default round's plays, so its update reads the features they built instead of rebuilding them.")
    view_entries: int = Field(VIEW_ENTRIES, ge=1024, description="Feature entries one view (an observation and its menu) holds at most, however many actions the environment lists; it also bounds an update's memory (64 such views per minibatch, 512 kept built).")
    seed: int | None = Field(None, description="Seeds the initial weights and the action sampling; unset: the run's seed (0 outside a run).")


class Learner:
    """A small policy over valid actions, trained from episodes with group-relative REINFORCE."""

    name = "learner"
    keeps_history = False
    needs_valid_actions = True
    lockstep = True
    trains_on_hint = True  # the hint is a teacher (distillation); see ``update``

    def __init__(self, config: LearnerConfig | None = None):
        self.config = config or LearnerConfig()
        if self.config.seed is None:
            self.config = self.config.model_copy(update={"seed": 0})
        c = self.config
        self.featurizer = Featurizer(bits=c.hash_bits, cache_entries=c.cache_entries, view_entries=c.view_entries,
                                     verb_free=c.verb_free)
        self.scorer = Scorer(c.hash_bits, c.hidden, c.seed, c.init_scale,
                             wide_priors=dict.fromkeys(hint_rule_rows(c.hash_bits), c.hint_prior))
        self.rng = np.random.default_rng([c.seed, 1])
        self.greedy = False  # True: always the best-scored action (no exploration)
        self.evaluation: EpisodeStreams | None = None  # set inside ``evaluating``
        self.updates = 0

    # -- acting ---------------------------------------------------------------
    def probabilities(self, observation: str, actions: list[str]) -> np.ndarray:
        """The policy's distribution over ``actions`` for ``observation``."""
        fwd = self.scorer.forward(make_batch([self.featurizer.view(observation, actions)]))
        return fwd.probs

    async def act(self, views: list[View]) -> list[Reply]:
        replies: list[Reply | None] = [None] * len(views)
        ready = []
        for i, view in enumerate(views):
            if view.valid_actions:
                ready.append(i)
            else:
                replies[i] = Reply(text="", action=None, error="the learner got no valid actions to choose from")
        if ready:
            feats = [self.featurizer.view(views[i].observation, views[i].valid_actions or []) for i in ready]
            fwd = self.scorer.forward(make_batch(feats))
            batch, pairs = fwd.batch, fwd.batch.decision_pairs  # views the lockstep turn shares are scored once
            picks = self._choose(fwd.probs[pairs], fwd.scores[pairs], batch.decision_starts,
                                 batch.sizes[batch.decision_view], [views[i] for i in ready])
            for i, pick in zip(ready, picks):
                action = (views[i].valid_actions or [])[pick]
                replies[i] = Reply(text=action, action=action)
        return [r for r in replies if r is not None]

    def _choose(self, probs: np.ndarray, scores: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                views: list[View]) -> list[int]:
        if self.greedy:
            return [int(np.argmax(scores[s:s + n])) for s, n in zip(starts, sizes)]
        # Inverse-CDF sampling for all views at once: one uniform draw per view.
        cdf = np.cumsum(probs)
        base = np.where(starts > 0, cdf[starts - 1], 0.0)
        draws = self.rng.random(len(starts)) if self.evaluation is None else self.evaluation.draws(views)
        targets = base + draws * (cdf[starts + sizes - 1] - base)
        picks = np.searchsorted(cdf, targets, side="right")
        return [int(p) for p in np.minimum(picks, starts + sizes - 1) - starts]

    def end_episodes(self, keys: list[str]) -> None:
        """Forget the finished episodes' evaluation streams (training keeps no per-episode state)."""
        if self.evaluation is not None:
            self.evaluation.end(keys)

    async def aclose(self) -> None:
        return None

    @contextmanager
    def evaluating(self, seed: int, greedy: bool = False) -> Iterator[Learner]:
        """Act on random streams of the evaluation's own (and optionally greedily), the training one untouched.

        Evaluation therefore never shifts the training trajectory: the curve of a
        seeded run is the same whatever the evaluation schedule. Each episode
        draws from its own stream, seeded by the evaluation's seed and the
        episode's play (``EpisodeStreams``), so an episode's actions do not
        depend on which episodes it was played beside or in what order, nor on
        a replay of it after its worker (or a Ray actor) was lost.
        """
        saved = self.evaluation, self.greedy
        self.evaluation, self.greedy = EpisodeStreams((self.config.seed or 0, 2, seed)), greedy
        try:
            yield self
        finally:
            self.evaluation, self.greedy = saved

    # -- learning -------------------------------------------------------------
    def update(self, episodes: Sequence[Episode]) -> dict[str, Any]:
        """One policy-gradient update from finished episodes; returns statistics.

        Advantages are group-relative (see ``grpo``). Decisions of episodes with
        zero advantage still carry the entropy bonus: that is what keeps a policy
        whose groups all fail from collapsing for good. Features are recomputed
        from each turn's recorded observation and valid actions.

        The decisions are read ``epochs`` times in minibatches (PPO-clipped after
        the first pass), since one Adam step per round teaches the policy too little per episode.
        With ``distill`` > 0, the decisions of won hinted episodes are also
        imitated on the observation without its hint line: the hint acts as a
        teacher for the no-hint policy, which is what the held-out suite (and an
        agent facing a new environment) measures. With ``disguise`` > 0, a share
        of the groups' decisions (imitations included) are also trained on a
        copy with their words renamed (``features.disguise``): one renaming per
        group, and only the decisions that carry a gradient.
        """
        c = self.config
        steps, played, disguised = self._decisions(episodes)
        scored = [ep for ep in episodes if ep.scored]
        stats: dict[str, Any] = {
            "episodes": len(episodes), "steps": played, "distilled": len(steps) - played - disguised,
            "disguised": disguised,
            "mean_return": float(np.mean([ep.ret for ep in scored])) if scored else 0.0,
            "loss": 0.0, "entropy": 0.0, "grad_norm": 0.0,
        }
        if not steps:
            return stats
        advantage = np.array([x[3] for x in steps], dtype=np.float32)
        chosen_index = np.array([x[2] for x in steps], dtype=np.int64)
        order_rng = np.random.default_rng([c.seed, 4, self.updates])

        decided = [(obs, actions) for obs, actions, _, _ in steps]

        def minibatches(order: np.ndarray) -> Minibatches:
            return Minibatches(self.featurizer, decided, order, c.minibatch_steps,
                               entries=BATCH_VIEWS * c.view_entries, keep=KEPT_VIEWS * c.view_entries)

        first = minibatches(np.arange(len(steps)))
        # Later passes reuse one shuffled split of the decisions with a nonzero advantage (the others
        # carry only the entropy bonus, which the first pass applied, and are most of an early batch);
        # each batch is built and row-sorted once however many passes read it (within the memory kept).
        later = minibatches(order_rng.permutation(np.flatnonzero(advantage != 0))) if c.epochs > 1 else None
        old_logp = np.zeros(len(steps))
        if later:  # the behaviour policy's log-probabilities, for the clipped passes
            for k in range(len(first)):
                idx, batch = first[k]
                logp = self.scorer.forward(batch).logp
                old_logp[idx] = logp[batch.view_starts[batch.decision_view] + chosen_index[idx]]
        passes = [(first, range(len(first)))]
        if later is not None:
            passes += [(later, order_rng.permutation(len(later))) for _ in range(c.epochs - 1)]
        totals = {"loss": 0.0, "entropy": 0.0, "grad_norm": 0.0, "clipped": 0.0}
        decisions = sum(len(mbs.groups[k]) for mbs, ks in passes for k in ks)
        for mbs, ks in passes:
            for k in ks:
                idx, batch = mbs[k]
                fwd = self.scorer.forward(batch)
                pairs = batch.decision_pairs
                d_decided, part = policy_gradient(fwd.probs[pairs], fwd.logp[pairs], batch.decision_starts,
                                                  batch.decision_pair_view, batch.decision_starts + chosen_index[idx],
                                                  advantage[idx], c.entropy_coef, old_logp[idx] if later else None,
                                                  c.clip)
                # The decisions on one view add up their gradients there: the network runs once per distinct view.
                d_scores = np.bincount(pairs, d_decided, minlength=len(fwd.scores)).astype(np.float32)
                grads = self.scorer.gradients(fwd, d_scores)
                part["grad_norm"] = self.scorer.apply(grads, c.lr, c.grad_clip)
                for key in totals:
                    totals[key] += part[key] * len(idx) / decisions
        self.updates += 1
        stats.update(totals)
        return stats

    def _decisions(self, episodes: Sequence[Episode]) -> tuple[list[Step], int, int]:
        """What an update trains on: each played decision with its advantage, the imitations of won hinted
        plays, and the disguised copies; with the counts of played and disguised decisions."""
        c = self.config
        advantages = group_advantages(episodes)
        steps: list[Step] = []
        played = disguised = 0
        disguise_rng = np.random.default_rng([c.seed, 5, self.updates])
        renamings: dict[GroupKey, Disguise | None] = {}

        def renaming(ep: Episode) -> Disguise | None:
            """A group's renaming, or None for most groups: its plays start from one view, then built once."""
            key = group_key(ep)
            if key not in renamings:
                draw = disguise_rng.random() < c.disguise
                renamings[key] = Disguise(disguise_rng, c.disguise_words) if draw else None
            return renamings[key]

        for ep, adv in zip(episodes, advantages):
            if not ep.scored:
                continue
            own: list[Step] = []
            for turn in ep.turns:
                if turn.action is None or not turn.valid_actions or turn.action not in turn.valid_actions:
                    continue
                own.append((turn.observation, turn.valid_actions, turn.valid_actions.index(turn.action), adv))
                played += 1
                if c.distill and ep.hinted and ep.success:
                    # The hint as a teacher: what won with the hint, imitated without it.
                    own.append((without_hint(turn.observation), turn.valid_actions,
                                turn.valid_actions.index(turn.action), c.distill * ep.ret))
            steps += own
            # Only decisions that carry a gradient are copied: a copy without advantage would teach nothing
            # but the entropy bonus, at the cost of building its view.
            telling = [step for step in own if step[3]]
            rename = renaming(ep) if telling and c.disguise else None
            if rename is not None:
                steps += [(rename(obs), [rename(a) for a in actions], chosen, weight)
                          for obs, actions, chosen, weight in telling]
                disguised += len(telling)
        return steps, played, disguised

    # -- checkpoints ----------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write ``learner.json`` (config, optimiser step) and ``weights.npz`` (changed rows only)."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        # Stored, not deflated: deflating the float weights and Adam moments takes twenty times as long for a file
        # 2.5 times smaller, and a run writes a checkpoint every round (keeping the last).
        np.savez(path / WEIGHTS_FILE, **self.scorer.state())
        meta = {
            "format": CHECKPOINT_FORMAT, "agent": self.name, "config": self.config.model_dump(),
            "adam_step": self.scorer.step, "updates": self.updates,
            "rng": self.rng.bit_generator.state,
        }
        (path / CONFIG_FILE).write_text(json.dumps(meta, indent=2))
        return path

    def restore(self, directory: str | Path) -> None:
        """Become the learner saved in ``directory`` (weights, optimiser, random state, config)."""
        self.__dict__.update(Learner.load(directory).__dict__)

    @classmethod
    def load(cls, directory: str | Path) -> Learner:
        path = Path(directory)
        meta_file, weights_file = path / CONFIG_FILE, path / WEIGHTS_FILE
        if not meta_file.is_file() or not weights_file.is_file():
            # The commands resolve a run directory to its last checkpoint (``store.learner_run``); Python may not.
            raise CheckpointError(
                f"{path} is not a learner checkpoint (it needs {CONFIG_FILE} and {WEIGHTS_FILE}); "
                "train one with `spadegym learn FILE --out DIR`, or for a run directory name one of its "
                "checkpoints/round-NNNN (spadegym.store.learner_run.run_learner finds the last)."
            )
        # A checkpoint is data someone may hand over: its settings are validated and its arrays checked against
        # them before anything the size of the model is allocated.
        try:
            meta = _read_meta(meta_file)
            config = LearnerConfig(**{**PREDATED, **meta["config"]})
            state = read_weights(weights_file, config.hash_bits, config.hidden)
            learner = cls(config)
            learner.scorer.load_state(state, meta["adam_step"])
            learner.updates = meta.get("updates", 0)
            if "rng" in meta:
                learner.rng.bit_generator.state = meta["rng"]
        except CheckpointError:
            raise
        except (UntrustedJSONError, WeightsError, KeyError, TypeError, ValueError, ValidationError, OSError) as exc:
            why = (f"{exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}" if isinstance(exc, ValidationError)
                   else str(exc))
            raise CheckpointError(
                f"{path} holds an unreadable learner checkpoint ({type(exc).__name__}: {why[:300]}); "
                "retrain with `spadegym learn`."
            ) from None
        return learner


class EpisodeStreams:
    """One random stream per episode, seeded by ``base`` and the episode's play; restarted when it restarts."""

    def __init__(self, base: tuple[int, ...]):
        self.base = base
        self.streams: dict[str, np.random.Generator] = {}

    def draws(self, views: list[View]) -> np.ndarray:
        """One uniform draw per view, each from its episode's stream (a first turn starts the stream anew)."""
        out = np.empty(len(views))
        for i, view in enumerate(views):
            stream = self.streams.get(view.episode_key)
            if stream is None or view.turn == 0:
                # The play names the episode however it is scheduled; the key only where no play stands behind it.
                name = (view.play or view.episode_key).encode()
                digest = int.from_bytes(hashlib.blake2b(name, digest_size=8).digest(), "little")
                stream = self.streams[view.episode_key] = np.random.default_rng([*self.base, digest])
            out[i] = stream.random()
        return out

    def end(self, keys: list[str]) -> None:
        for key in keys:
            self.streams.pop(key, None)


def _read_meta(meta_file: Path) -> dict[str, Any]:
    """``learner.json`` as a table whose format, settings and counters have the types the learner writes."""
    if meta_file.stat().st_size > META_BYTES:
        raise CheckpointError(f"{meta_file} holds more than {META_BYTES:,} bytes, which no learner checkpoint does; "
                              "retrain with `spadegym learn`.")
    meta = loads(meta_file.read_bytes(), f"{meta_file}")
    if not isinstance(meta, dict) or meta.get("format") != CHECKPOINT_FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise CheckpointError(f"{meta_file} has checkpoint format {found!r}, this spadegym reads "
                              f"format {CHECKPOINT_FORMAT}; retrain with `spadegym learn`.")
    counters = {key: meta.get(key, 0) for key in ("adam_step", "updates")}
    if not isinstance(meta.get("config"), dict) or not all(
            isinstance(n, numbers.Integral) and not isinstance(n, bool) and n >= 0 for n in counters.values()):
        raise CheckpointError(f"{meta_file} holds malformed settings or counters (config must be a table, "
                              "adam_step and updates counts); retrain with `spadegym learn`.")
    return meta


def make_learner(path: str | None = None, seed: int = 0, config: LearnerConfig | dict[str, Any] | None = None) -> Learner:
    """The learner for the agent specs ``learner`` (fresh) and ``learner:DIR`` (a checkpoint, with its own config).

    A fresh learner takes ``config``; its ``seed`` is the run's ``seed`` unless the config sets one.
    """
    if path:
        return Learner.load(path)
    settings = LearnerConfig.model_validate(config or {})
    if settings.seed is None:
        settings = settings.model_copy(update={"seed": seed})
    return Learner(settings)
