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
play with any spadegym agent (``play``: one WebSocket session per episode, the
agent's reply reduced by the action rule, the return by the return rule, and
the same ``Episode`` records a run stores). The code runs on its server, not in
spadegym's sandbox: only what crosses the wire is checked.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.generic_client import GenericEnvClient

from ..agents.base import Agent, View
from ..envfile import clip_reward, episode_return
from ..rollout.records import Episode, Turn
from ..rollout.runner import FORMAT_REMINDER
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


@dataclass
class WireCheck:
    """What can be checked of a remote environment without its code."""

    url: str
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # check -> one sentence

    @property
    def ok(self) -> bool:
        return not self.failed


def observation_text(observation: Any) -> str:
    """The text an agent reads from an OpenEnv observation: its text field, else the whole observation as JSON."""
    if isinstance(observation, dict):
        for key in ("text", "prompt", "message", "observation", "content"):
            if isinstance(observation.get(key), str):
                return observation[key]
        return json.dumps({k: v for k, v in observation.items() if k != "metadata"}, sort_keys=True, default=str)
    return str(observation)


class OpenEnvLevel:
    """An OpenEnv environment server as an external spadegym level.

    ``action_key`` names the action field the server expects (``message`` for
    spadegym's own server); the agent's action (its last ``\\boxed{}``) goes there.
    OpenEnv has one ``done`` flag, read as the episode's termination.
    """

    def __init__(self, url: str, action_key: str = "message", level_id: str | None = None,
                 max_turns: int = 25, reset_args: dict[str, Any] | None = None, send_reply: bool = False):
        self.url = url.rstrip("/")
        self.action_key = action_key
        self.send_reply = send_reply  # send the whole reply (servers that parse it, as spadegym's does)
        self.reset_args = dict(reset_args or {})  # extra reset arguments the server takes (e.g. level_id)
        self.level_id = level_id or self.url
        self.max_turns = max_turns

    def client(self) -> Any:
        return GenericEnvClient(base_url=self.url).sync()

    def check(self, seed: int = 0, probe_action: str = "0") -> WireCheck:
        """The gate's checks that the wire allows: reset and step answer, data types, seeded determinism."""
        result = WireCheck(self.url)
        try:
            with self.client() as env:
                first = env.reset(seed=seed, **self.reset_args)
                again = env.reset(seed=seed, **self.reset_args)
                moved = env.step({self.action_key: probe_action})
        except Exception as exc:  # noqa: BLE001 - a remote failure of any kind is a failed check
            result.failed["reachable"] = f"{self.url} did not answer reset/step over OpenEnv's WebSocket ({exc})."
            return result
        result.passed.append("reachable")
        if isinstance(first.observation, dict) and observation_text(first.observation):
            result.passed.append("observation_is_data")
        else:
            result.failed["observation_is_data"] = "reset's observation is not a JSON object with text."
        if observation_text(first.observation) == observation_text(again.observation):
            result.passed.append("seed_determinism")
        else:
            result.failed["seed_determinism"] = (f"reset(seed={seed}) gave two different observations: "
                                                 "the server ignores the seed or is not deterministic.")
        if moved.reward is None or isinstance(moved.reward, (int, float)):
            result.passed.append("reward_type")
        else:
            result.failed["reward_type"] = f"step's reward is {type(moved.reward).__name__}, not a number."
        return result

    async def play(self, agent: Agent, episodes: int = 1, seed: int = 0) -> list[Episode]:
        """Play ``episodes`` episodes (instance seeds ``seed``, ``seed + 1``, ...) with a spadegym agent."""
        played = []
        for i in range(episodes):
            played.append(await self._episode(agent, seed + i, key=f"{self.level_id}:{seed + i}"))
        return played

    async def _episode(self, agent: Agent, seed: int, key: str) -> Episode:
        episode = Episode(env_id=self.level_id, seed=seed, hinted=False)
        started = time.perf_counter()
        history: list[tuple[str, str]] = []
        last_reward, done = 0.0, False
        async with GenericEnvClient(base_url=self.url) as env:
            result = await env.reset(seed=seed, **self.reset_args)
            observation = observation_text(result.observation)
            while not done and len(episode.turns) < self.max_turns:
                valid = result.observation.get("valid_actions") if isinstance(result.observation, dict) else None
                view = View(episode_key=key, observation=observation, valid_actions=valid,
                            history=list(history) if agent.keeps_history else [],
                            turn=len(episode.turns), max_turns=self.max_turns)
                reply = (await agent.act([view]))[0]
                turn = Turn(observation=observation, reply=reply.text, action=reply.action)
                episode.turns.append(turn)
                history.append((observation, reply.text))
                if reply.error is not None:
                    episode.failure, episode.failure_message = "agent", reply.error
                    break
                if reply.action is None:
                    episode.format_failures += 1
                    observation = f"{observation.rstrip()}\n{FORMAT_REMINDER}"
                    continue
                result = await env.step({self.action_key: reply.text if self.send_reply else reply.action})
                last_reward = clip_reward(float(result.reward or 0.0))
                done = bool(result.done)
                turn.reward, turn.terminated = last_reward, done
                observation = observation_text(result.observation)
        agent.end_episodes([key])
        episode.terminated, episode.truncated = done, not done
        episode.final_observation = observation
        episode.ret = episode_return(last_reward, done) if episode.failure is None else 0.0
        episode.seconds = time.perf_counter() - started
        return episode
