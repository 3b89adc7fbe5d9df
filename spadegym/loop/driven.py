"""The curriculum as a trainer drives it: the loop's rounds, with the trainer's rollouts as the plays.

``spadegym run`` plays each round itself. Here a trainer (TRL's GRPOTrainer, a
verifiers environment) plays them: it ``draw``s a slot of the live round for
each rollout and ``report``s each finished play. Between the two, nothing new:
a round is opened by ``SelfPlay.open_round`` (proposals through the gate,
replay from the buffer) and closed by ``SelfPlay.close_round`` (designer
rewards, watch, buffer scores, staleness and eviction, the store), so the run
directory is the one ``spadegym run`` writes and ``report``/``export`` read.

The rules, and why:

- A round's slots are its GRPO groups: each (level, arm, group) of
  ``SelfPlay.plays`` is one *row*, played ``group_size`` times by the trainer
  (its ``num_generations``), all on the row's one instance seed, as the loop's
  own groups are. A trainer's ticket (a dataset row's id) keeps its row until
  the row's plays are all handed out, so the generations of one prompt, spread
  over processes, play the same level and seed.
- Hinted rows are handed out like the others: the trained model plays the hint
  arm itself (same weights, same sampling), and the entry points keep those
  plays out of the loss. The regret is then the trained policy's own.
- A draw never waits for a report: when every row of the open rounds is handed
  out, the next round opens (a trainer resets a whole batch before it scores
  any of it, so waiting would deadlock). Rounds close in order, each once all
  of its plays are reported; a round opened early sees the buffer as it was,
  one round late, as the paper's designer reward is applied late too.
- A play is reported once: its ``play_id`` is the key, a second report is
  answered ``duplicate`` and counted nowhere. The server's record of the slot
  (level, seed, arm, group) is the truth; the report brings the return and
  the transcript.
- Only committed rounds survive a kill: resume reopens the store and goes on
  from its next round (the plays of unfinished rounds are lost with them).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..executor import make_executor
from ..rollout import Episode, Play
from ..store import DB_NAME, RunStore
from .config import read_settings, validate_config
from .safety import resumed_config
from .selfplay import OpenRound, SelfPlay

#: What a trainer-driven run stores as its agent: the trainer's model plays, so no agent of the loop ever does.
TRAINER_AGENT = "random"


@dataclass
class Draw:
    """One rollout's slot: the level to play (its source travels, so any process can play it), seed and arm."""

    play_id: str
    round: int
    level_id: str
    source: str
    filename: str
    hint: str | None
    skill: str
    seed: int
    hinted: bool
    group: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Row:
    """One GRPO group of an open round: played ``left`` more times."""

    play: Play
    left: int
    ticketed: bool = False  # a ticket holds it (its plays go to that ticket's rollouts)


@dataclass
class _Round:
    opened: OpenRound
    rows: list[_Row]
    handed: dict[str, Play] = field(default_factory=dict)  # play id -> its slot
    episodes: dict[str, Episode] = field(default_factory=dict)  # play id -> its reported episode

    @property
    def complete(self) -> bool:
        return all(r.left == 0 for r in self.rows) and len(self.episodes) == len(self.handed)


class DrivenCurriculum:
    """A run's curriculum for a trainer: ``draw`` a slot per rollout, ``report`` each finished play.

    Thread-safe (a service calls it from several request threads): one lock around the loop's state.
    """

    def __init__(self, loop: SelfPlay, generations: int):
        self.loop = loop
        self.generations = generations
        self._lock = threading.Lock()
        self._open: list[_Round] = []  # open rounds, oldest first
        self._next = loop.state.next_round
        self._tickets: dict[str, _Row] = {}
        self._closed: set[str] = set()  # play ids of the rounds closed by this launch
        self._serial = 0
        self._launch = secrets.token_hex(
            4
        )  # play ids of an earlier launch (before a resume) name no play of this one
        self.counts = {"drawn": 0, "reported": 0, "duplicates": 0, "rounds_closed": 0}
        loop.suites = []  # held-out play needs an agent of the loop's own: the trainer evaluates its model itself

    # -- the two calls ---------------------------------------------------------
    def draw(self, ticket: str) -> Draw:
        """The slot for one rollout of ``ticket`` (a dataset row): its row's level and seed while it has plays left."""
        with self._lock:
            row, n = self._row_for(str(ticket))
            row.left -= 1
            self._serial += 1
            play_id = f"{n}:{self._launch}:{self._serial}"
            opened = self._round(n)
            opened.handed[play_id] = row.play
            level = opened.opened.levels[row.play.env_id]
            self.counts["drawn"] += 1
            return Draw(
                play_id,
                n,
                row.play.env_id,
                level.source or "",
                f"{row.play.env_id}.py",
                level.hint,
                level.info.skill or "",
                row.play.seed,
                row.play.hinted,
                row.play.group,
            )

    def report(self, play_id: str, episode: Episode) -> str:
        """Take a finished play: ``"ok"``, or ``"duplicate"`` for a play already reported (counted once)."""
        with self._lock:
            n = _round_of(play_id)
            opened = next((r for r in self._open if r.opened.record.round == n), None)
            if opened is None or play_id not in opened.handed:
                if play_id in self._closed:
                    self.counts["duplicates"] += 1  # its round is closed: this play was counted in it
                    return "duplicate"
                raise UserError(
                    f"play {play_id!r} was never drawn from this curriculum; report only the play_id "
                    "a draw returned."
                )
            if play_id in opened.episodes:
                self.counts["duplicates"] += 1
                return "duplicate"
            slot = opened.handed[play_id]
            # The slot is the server's: a client reports how the play went, never which play it was.
            episode.env_id, episode.seed, episode.hinted, episode.group = (
                slot.env_id,
                slot.seed,
                slot.hinted,
                slot.group,
            )
            episode.ret = max(-1.0, min(1.0, float(episode.ret)))
            opened.episodes[play_id] = episode
            self.counts["reported"] += 1
            self._close_ready()
            return "ok"

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {
                **self.counts,
                "next_round": self.loop.state.next_round,
                "open_rounds": [r.opened.record.round for r in self._open],
            }

    # -- inside ----------------------------------------------------------------
    def _row_for(self, ticket: str) -> tuple[_Row, int]:
        row = self._tickets.get(ticket)
        if row is not None and row.left > 0:
            return row, self._round_holding(row)
        free = next(((r, o) for o in self._open for r in o.rows if not r.ticketed), None)
        if free is None:
            opened = self._open_next()
            free = (opened.rows[0], opened)
        row, opened = free
        row.ticketed = True
        self._tickets[ticket] = row
        return row, opened.opened.record.round

    def _open_next(self) -> _Round:
        n = self._next
        opened = self.loop.open_round(n)
        rows = _groups(self.loop.plays(n, opened.levels, opened.shares))
        if not rows:
            raise UserError(f"round {n} has no levels to play; check the designer and pool settings.")
        self._next += 1
        self._open.append(_Round(opened, [_Row(p, self.generations) for p in rows]))
        return self._open[-1]

    def _round(self, n: int) -> _Round:
        return next(r for r in self._open if r.opened.record.round == n)

    def _round_holding(self, row: _Row) -> int:
        return next(r.opened.record.round for r in self._open if any(x is row for x in r.rows))

    def _close_ready(self) -> None:
        """Close the oldest rounds whose plays are all in, in order (a later complete round waits for earlier ones)."""
        while self._open and self._open[0].complete:
            done = self._open.pop(0)
            episodes = [done.episodes[p] for p in done.handed]
            self.loop.close_round(done.opened, episodes)
            self.counts["rounds_closed"] += 1
            self._closed.update(done.handed)
            held = {id(r) for r in done.rows}
            self._tickets = {t: r for t, r in self._tickets.items() if id(r) not in held}


def _groups(plays: list[Play]) -> list[Play]:
    """One play per GRPO group (level, arm, group): the rows a trainer plays ``group_size`` times each."""
    seen: dict[tuple[str, bool, int], Play] = {}
    for play in plays:
        seen.setdefault((play.env_id, play.hinted, play.group), play)
    return list(seen.values())


def _round_of(play_id: str) -> int | None:
    head = str(play_id).partition(":")[0]
    return int(head) if head.isdigit() else None


@contextmanager
def driven_curriculum(
    config_file: str | Path | None, run_dir: str | Path, *, generations: int, trainer: str
) -> Iterator[DrivenCurriculum]:
    """The curriculum of ``config_file`` (a ``spadegym run`` config) in ``run_dir``: a new run, or the stored one
    resumed (its experiment from the store, its safety settings from ``config_file``, as ``--resume`` does).

    ``generations``: the trainer's plays per group; it must be the config's ``group_size`` (None: that). ``trainer`` names
    the trainer in the store's versions.
    """
    from .run import build_parts, versions

    settings = read_settings(config_file, None, None, "buffer.capacity=128")
    where = config_file or "the settings"
    if "agent" in settings:
        raise UserError(
            f"{where}: remove `agent`; the trainer's model plays the agent's role in a trainer-driven "
            "curriculum."
        )
    settings["agent"] = TRAINER_AGENT
    run_dir = Path(run_dir)
    if (run_dir / DB_NAME).is_file():
        store = RunStore.open(run_dir)
        try:
            config, _changed = resumed_config(store.config, settings, run_dir)
        except UserError:
            store.close()
            raise
    else:
        config = validate_config(settings, source=str(where))
        store = None
    generations = config.group_size if generations is None else generations
    if config.group_size != generations:
        raise UserError(
            f"{where}: group_size is {config.group_size} but the trainer plays {generations} "
            f"generations per prompt; set group_size = {generations}."
        )
    if store is None:
        store = RunStore.create(run_dir, config.model_dump(mode="json"), {**versions(), "trainer": trainer})
    with ExitStack() as stack:
        stack.callback(store.close)
        executor = stack.enter_context(make_executor(config.executor, config.sandbox, config.ray))
        loop = build_parts(config, store, executor)
        stack.callback(loop.close)
        yield DrivenCurriculum(loop, generations)
