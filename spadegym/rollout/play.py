"""Play one environment file with one agent: what `spadegym play` runs.

The file is loaded once in the sandbox first, so a broken file is reported
with the sandbox's own sentence before any episode starts. Episode ``i`` uses
seed ``seed + i``: any episode can be replayed alone with ``--seed``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..envfile import OptionalMethods, SourceError, read_source
from ..level import Level
from ..sandbox import Sandbox, SandboxConfig
from .agent import Agent
from .records import Episode
from .runner import Play, RolloutConfig, run_episodes


class PlayFileError(ValueError):
    """The environment file cannot be played (unreadable, or fails to load in the sandbox)."""


@dataclass
class PlaySetup(OptionalMethods):
    """One environment file, ready to play."""

    path: Path
    level: Level
    methods: list[str]  # the optional methods the loaded class defines
    declared_max_turns: int | None


def load_for_play(sandbox: Sandbox, path: str | Path, hint: str | None = None) -> PlaySetup:
    """Read the file and load it once in the sandbox; ``PlayFileError`` (one sentence) if that fails."""
    path = Path(path)
    try:
        source = read_source(path)
    except SourceError as exc:
        raise PlayFileError(str(exc)) from None
    handle = sandbox.open(source, path.name)
    try:
        if not handle.loaded.ok:
            raise PlayFileError(f"{path}: does not load ({handle.loaded.status}): {handle.loaded.message}")
        info = handle.info
    finally:
        handle.close()
    methods = info.get("methods", [])
    return PlaySetup(path=path, level=Level(source, hint=hint),
                     methods=list(methods),
                     declared_max_turns=info.get("max_turns"))


def plays_for(setup: PlaySetup, episodes: int, seed: int, hinted: bool) -> list[Play]:
    return [Play(env_id=setup.path.stem, seed=seed + i, hinted=hinted, group=i) for i in range(episodes)]


async def play_file(
    path: str | Path,
    agent: Agent,
    *,
    episodes: int = 1,
    seed: int = 0,
    hint: str | None = None,
    hinted: bool = False,
    max_turns: int = 25,
    concurrency: int = 16,
    sandbox_config: SandboxConfig | None = None,
    on_episode: Callable[[Episode], None] | None = None,
) -> list[Episode]:
    """Play ``episodes`` episodes of one file; with ``hint`` (or ``hinted``: the file's own hint) in the hint arm."""
    with Sandbox(sandbox_config) as sandbox:
        setup = load_for_play(sandbox, path, hint)
        if hinted and hint is None and not setup.has_hint:
            raise PlayFileError(f"{setup.path}: defines no hint; pass the hint text with --hint TEXT.")
        plays = plays_for(setup, episodes, seed, hinted or hint is not None)
        config = RolloutConfig(max_turns=max_turns, concurrency=max(1, min(concurrency, episodes)))
        return await run_episodes(sandbox, {setup.path.stem: setup.level}, plays, agent, config,
                                  on_episode=on_episode)
