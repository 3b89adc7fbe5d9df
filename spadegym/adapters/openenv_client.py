"""OpenEnv clients: a typed client for `spadegym serve`, and OpenEnv servers as a spadegym level source.

``SpadegymClient`` is an OpenEnv ``EnvClient`` (WebSocket, one session per
connection) that speaks the server's typed action and observation:

    with SpadegymClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0)
        result = env.step(SpadegymAction(message="\\\\boxed{7}"))
        result.observation.text, result.reward, result.done

``OpenEnvLevel`` goes the other way: any OpenEnv environment server (a URL)
becomes something spadegym can check over the wire (``check``: reset and step
answer, observations are data, a seed gives the same first observation) and
play with any spadegym agent (``play``: the run's own episode loop on an
``executor.LevelHost``, so the action rule, the return rule and the
``Episode`` records are a run's). The code runs on its server, not in
spadegym's sandbox: only what crosses the wire is checked. In a run, the same
URL is a level source (``spadegym run --source openenv:URL``).
"""

from __future__ import annotations

from typing import Any

from . import openenv_import  # noqa: F401  (first: OpenEnv without its unused web UI)

# isort: split
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.generic_client import GenericEnvClient

from ..agents.base import Agent
from ..executor import LevelHost
from ..executor.openenv import WireCheck, wire_check
from ..level import Level, Remote
from ..rollout import Episode, Play, RolloutConfig, run_episodes
from .openenv_server import SpadegymAction, SpadegymObservation, SpadegymState


class SpadegymClient(EnvClient[SpadegymAction, SpadegymObservation, SpadegymState]):
    """The typed OpenEnv client of `spadegym serve`."""

    def _step_payload(self, action: SpadegymAction) -> dict[str, Any]:
        return {"message": action.message}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[SpadegymObservation]:
        obs = SpadegymObservation(**payload.get("observation", {}), done=payload.get("done", False),
                                  reward=payload.get("reward"))
        return StepResult(observation=obs, reward=payload.get("reward"), done=payload.get("done", False),
                          metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> SpadegymState:
        return SpadegymState(**payload)


class OpenEnvLevel:
    """An OpenEnv environment server as an external spadegym level (``level``: a ``Level`` of kind remote).

    ``options`` are the server's settings (``level.RemoteOptions``): ``action_key`` names the
    action field the server expects (``message`` for spadegym's own server), and the agent's
    action (its last ``\\boxed{}``) goes there. OpenEnv has one ``done`` flag, read as the
    episode's termination.
    """

    def __init__(self, url: str, level_id: str | None = None, **options: Any):
        self.level = Level(remote=Remote(url=url, **options))
        self.remote: Remote = self.level.remote  # type: ignore[assignment] - a remote level has one
        self.level_id = level_id or self.remote.url

    @property
    def url(self) -> str:
        return self.remote.url

    def client(self) -> Any:
        return GenericEnvClient(base_url=self.url).sync()

    def check(self, seed: int = 0, probe_action: str | None = None) -> WireCheck:
        """The gate's checks that the wire allows: reset and step answer, data types, seeded determinism."""
        return wire_check(self.remote, seed=seed, probe_action=probe_action)

    async def play(self, agent: Agent, episodes: int = 1, seed: int = 0) -> list[Episode]:
        """Play ``episodes`` episodes (instance seeds ``seed``, ``seed + 1``, ...) with a spadegym agent:
        the run's own episode loop, on a host of remote levels."""
        plays = [Play(self.level_id, seed + i) for i in range(episodes)]
        host = LevelHost(None)
        try:
            return await run_episodes(host, {self.level_id: self.level}, plays, agent,
                                      RolloutConfig(max_turns=self.remote.max_turns, concurrency=1))
        finally:
            host.close()
