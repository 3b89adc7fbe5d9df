"""Behavioural fingerprints: how a level plays under fixed probe policies, with its words abstracted away.

Every new level is played at the same few instance seeds by ``PROBE_POLICIES``
scripted policies that pick actions by their position in the menu (never by
their words), so two levels that differ only in names and phrasing are played
move for move alike. Each turn of a probe play is written as one token: the
menu's size, how many observation lines changed, the reward; the episode's end
as another (``m4c2+ m4c1- win2``), after the shapes of the first observation's
lines (``a:9`` for ``turns left: 7``). A level's fingerprint is the 1- and
2-grams of its probe plays' tokens, and two levels are compared as texts are
(``curriculum.diversity.similarity``): the behaviour twin of a new level is the
pool level whose fingerprint is closest.

A play's tokens are a fixed-size summary, whatever the level prints: the shapes
of the first ``SHAPE_LINES`` lines (each cut to ``SHAPE_CHARS``) and the order of
magnitude of how many more, the first ``TURN_TOKENS`` turns, then the end. The
watch keeps them with the run, so a level cannot grow its state by printing more.

The same policies also play at the instance seeds where every play of a
round had one outcome (the agency check: would other actions change it?).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

import numpy as np

from ..curriculum.diversity import Grams, ngrams, similarity
from ..level import Level
from ..rollout import Episode, HandlePool, Play, RolloutConfig, run_episodes
from ..rollout.agent import Reply, View
from ..validate.probes import GENERIC_ANSWERS

#: Scripted policies that play every new level (each at every probe seed).
PROBE_POLICIES = 2
#: A play's tokens: at most this many first-observation line shapes, each at most this long, and turns.
SHAPE_LINES, SHAPE_CHARS, TURN_TOKENS = 16, 32, 64


def menu_index(policy: int, turn: int, size: int) -> int:
    """The menu position ``policy`` picks at ``turn``: fixed, whatever the actions are called."""
    digest = hashlib.blake2b(f"{policy}:{turn}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little") % size


class ProbeAgent:
    """Picks the action at ``menu_index`` of the listed actions (a generic answer when none are listed)."""

    name = "probe"
    keeps_history = False
    needs_valid_actions = False
    lockstep = True

    def __init__(self, policy: int):
        self.policy = policy

    async def act(self, views: list[View]) -> list[Reply]:
        replies = []
        for view in views:
            menu = view.valid_actions or list(GENERIC_ANSWERS)
            action = menu[menu_index(self.policy, view.turn, len(menu))]
            replies.append(Reply(text=action, action=action))
        return replies

    def end_episodes(self, keys: list[str]) -> None:
        """Nothing to forget: a probe policy keeps no state."""

    async def aclose(self) -> None:
        return None


async def probe(host: object, levels: Mapping[str, Level], at: Sequence[tuple[str, int]],
                rollout: RolloutConfig | None = None) -> list[Episode]:
    """Each probe policy's play (no hint) of each ``(level, instance seed)`` of ``at``; one worker pool for all."""
    if not at:
        return []
    handles = HandlePool(host, limit=2 * (rollout or RolloutConfig()).concurrency)  # type: ignore[arg-type]
    episodes: list[Episode] = []
    try:
        for policy in range(PROBE_POLICIES):
            plays = [Play(env_id, seed, hinted=False, group=policy) for env_id, seed in at]
            episodes += await run_episodes(host, levels, plays, ProbeAgent(policy), rollout,  # type: ignore[arg-type]
                                           handles=handles)
    finally:
        handles.close()
    return episodes


_WORDS = re.compile(r"[A-Za-z_']+(?:\s+[A-Za-z_']+)*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def line_shape(line: str) -> str:
    """A line with every run of words one ``a`` and every number ``9`` (``turns left: 7`` -> ``a:9``)."""
    return _NUMBER.sub("9", _WORDS.sub("a", line)).replace(" ", "")


def behaviour_tokens(episode: Episode) -> list[str]:
    """One play without its words: the shapes of the first observation's lines, then a token per turn
    (menu size, observation lines changed, sign of the reward), then how it ended and after how many turns."""
    observations = [t.observation for t in episode.turns[:TURN_TOKENS]]
    observations.append(episode.turns[TURN_TOKENS].observation if len(episode.turns) > TURN_TOKENS
                        else episode.final_observation)
    tokens = shape_tokens(observations[0])
    for i, turn in enumerate(episode.turns[:TURN_TOKENS]):
        before = set(observations[i].splitlines())
        changed = sum(1 for line in observations[i + 1].splitlines() if line not in before)
        sign = "+" if turn.reward > 0 else "-" if turn.reward < 0 else "0"
        tokens.append(f"m{len(turn.valid_actions or [])}c{changed}{sign}")
    end = "win" if episode.success else "cut" if episode.truncated else "lose" if episode.terminated else "stop"
    tokens.append(f"{end}{len(episode.turns)}")
    return tokens


def shape_tokens(observation: str) -> list[str]:
    """The first observation's first ``SHAPE_LINES`` line shapes, then how many lines more to a power of two."""
    lines = observation.splitlines()
    tokens = [f"s:{line_shape(line[:4 * SHAPE_CHARS])[:SHAPE_CHARS]}" for line in lines[:SHAPE_LINES]]
    if len(lines) > SHAPE_LINES:
        tokens.append(f"s+{(len(lines) - SHAPE_LINES).bit_length()}")
    return tokens


def fingerprint(plays: Sequence[Sequence[str]]) -> Grams:
    """The 1- and 2-grams of the behaviour tokens of a level's probe plays (each play apart)."""
    grams = Grams()
    for tokens in plays:
        for n in (1, 2):
            grams.update(zip(*(tokens[i:] for i in range(n))))
    return grams


def twin(new: Grams, pool: Mapping[str, Grams]) -> tuple[str, float] | None:
    """The pool level whose fingerprint is closest to ``new``, and how close (1: alike); None for an empty pool."""
    ids = [i for i in pool if pool[i]]
    if not ids or not new:
        return None
    row = similarity([new, *(pool[i] for i in ids)])[0, 1:]
    best = int(np.argmax(row))
    return ids[best], float(row[best])


def code_similarity(a: str, b: str) -> float:
    """How alike two sources read to the diversity measure (TF-IDF cosine of their word n-grams), numbers
    aside: levels that differ only in their knob values read as one."""
    return float(similarity([ngrams(_NUMBER.sub("0", a)), ngrams(_NUMBER.sub("0", b))])[0, 1])
