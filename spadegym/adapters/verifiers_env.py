"""verifiers (v1 API): a taskset over a pool or a live run, and an env that plays levels in the sandbox.

    eval spadegym-verifiers --env.taskset.levels pool/ --model MODEL --client.base-url URL

verifiers finds a taskset by an installed package name, so the plugin is the
top-level package ``spadegym_verifiers`` (it re-exports this module). One task
is one episode of one level instance (``level_id`` and ``seed``; over a live
run the level is drawn from the run's buffer when the episode starts). The env
steps the level host-side as the run's user, in a sandbox worker: each
assistant reply goes through spadegym's action rule (its last ``\\boxed{}``),
the next observation is the next user turn, and the episode's return (the one
return rule) is recorded as the reward ``return``.

A live curriculum (``--env.taskset.curriculum RUN_DIR``, where ``spadegym
curriculum`` serves one): each task is a ticket, and each of its rollouts
(``--num-rollouts``: the config's ``group_size``) draws the ticket's slot from
the curriculum when it starts and reports its play when it ends. A slot of the
hint arm shows the hint line; its return is recorded with weight 0 and
``info["hinted"]``, so its group scores 0 and trains nothing.

The harness is an in-process chat turn (``SpadegymChatHarness``): one model call
per segment through verifiers' interception endpoint, so every call is traced
and no agent program needs installing.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator

import verifiers.v1 as vf
from openai import AsyncOpenAI
from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.harness import Harness
from verifiers.v1.runtimes import ProgramResult, SubprocessConfig

from .curriculum_client import CurriculumClient, CurriculumPlay
from .levels import RunLevels, open_levels
from .session import PlaySession

SYSTEM_PROMPT = ("You play a text game, one move per reply. Think if you like, then end each reply with your "
                 "move in \\boxed{...}.")


class SpadegymTasksetConfig(vf.TasksetConfig):
    levels: str = ""
    """An environment file, a folder of them (a pool), or a run directory (live)."""
    tasks: int = 64
    """Tasks (level instances) the taskset yields."""
    seed: int = 0
    """Seed of the level draws and instance seeds."""
    hinted: bool = False
    """Play the hint arm: the hint line in the first observation."""
    max_turns: int = 25
    """Turn budget for levels that declare none."""
    curriculum: str = ""
    """A run directory a ``spadegym curriculum`` service serves: tasks are its draws (``levels`` unused)."""


class SpadegymData(vf.TaskData):
    info: dict
    """``level_id`` (empty: draw from a live run at the start) and the instance ``seed``."""


class SpadegymTask(vf.Task[SpadegymData, vf.State, vf.TaskConfig]):
    pass


class SpadegymTaskset(vf.Taskset[SpadegymTask, SpadegymTasksetConfig]):
    def load(self) -> Iterator[SpadegymTask]:
        if self.config.curriculum:  # tickets: each rollout draws its slot from the live curriculum when it starts
            for i in range(self.config.tasks):
                yield SpadegymTask(SpadegymData(idx=i, name=f"curriculum#{i}", prompt=None, system_prompt=SYSTEM_PROMPT,
                                                info={"ticket": str(i)}), self.config.task)
            return
        if not self.config.levels:
            raise ValueError("set --env.taskset.levels to an environment file, a pool folder or a run directory")
        source = open_levels(self.config.levels)
        rng = random.Random(self.config.seed)
        pool = [] if isinstance(source, RunLevels) else source.levels()
        for i in range(self.config.tasks):
            level_id = rng.choices(pool, weights=[lv.weight for lv in pool])[0].level_id if pool else ""
            seed = rng.getrandbits(31)
            yield SpadegymTask(SpadegymData(idx=i, name=f"{level_id or 'live'}#{seed}", prompt=None,
                                            system_prompt=SYSTEM_PROMPT, info={"level_id": level_id, "seed": seed}),
                               self.config.task)


class SpadegymEnvConfig(vf.EnvConfig):
    # The harness runs no program (see SpadegymChatHarness): a local runtime, nothing to provision.
    player: vf.AgentConfig = vf.AgentConfig(runtime=SubprocessConfig())


class SpadegymEnv(vf.Env[SpadegymEnvConfig]):
    """Plays one level instance per task: the level is the user, the model the player."""

    async def run(self, task, agents) -> None:
        config: SpadegymTasksetConfig = self.taskset.config
        if config.curriculum:
            await self._run_drawn(task, agents, config)
            return
        session = PlaySession(open_levels(config.levels), hinted=config.hinted, max_turns=config.max_turns)
        info = task.data.info
        try:
            # The sandbox calls block on pipes: off the event loop, so other episodes go on.
            moved = await asyncio.to_thread(session.reset, info["seed"], info["level_id"] or None)
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn(moved.observation)
                while not segment.terminated:
                    moved = await asyncio.to_thread(session.step, segment.last_reply)
                    if moved.done:
                        break
                    segment = await interaction.turn(moved.observation)
                # Inside the interaction: the rollout is finished (and logged) when it closes.
                trace = interaction.trace
                trace.record_reward("return", float(moved.info.get("return", 0.0)), 1.0)
                trace.info["level_id"] = moved.info["level"]
                trace.info["turns"] = moved.info["turn"]
                if moved.info.get("failure"):
                    trace.info["failure"] = moved.info["failure"]
        finally:
            await asyncio.to_thread(session.close)

    async def _run_drawn(self, task, agents, config: SpadegymTasksetConfig) -> None:
        """One rollout of a curriculum ticket: draw, play, report (once, also when the rollout fails)."""
        play = CurriculumPlay(CurriculumClient.at(config.curriculum), actions="boxed", max_turns=config.max_turns,
                              origin="verifiers")
        try:
            moved = await asyncio.to_thread(play.start, task.data.info["ticket"])
            assert play.session is not None and play.draw is not None
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn(moved.observation)
                while not segment.terminated:
                    moved = await asyncio.to_thread(play.session.step, segment.last_reply)
                    if moved.done:
                        break
                    segment = await interaction.turn(moved.observation)
                ret = await asyncio.to_thread(play.finish)
                trace = interaction.trace
                # The hint arm measures regret: recorded, weighted 0, so it never trains.
                trace.record_reward("return", ret, 0.0 if play.draw.hinted else 1.0)
                trace.info.update(level_id=play.draw.level_id, round=play.draw.round, hinted=play.draw.hinted,
                                  play_id=play.draw.play_id)
        finally:
            await asyncio.to_thread(play.finish)
            await asyncio.to_thread(play.close)


def env_config(levels: str = "", tasks: int = 64, seed: int = 0, hinted: bool = False,
               max_turns: int = 25, curriculum: str = "") -> SpadegymEnvConfig:
    """The run's ``[env]`` block for ``verifiers.v1.load_environment``: this taskset over ``levels``, or over the
    draws of the curriculum ``spadegym curriculum`` serves for the run directory ``curriculum``."""
    return SpadegymEnvConfig(taskset=SpadegymTasksetConfig(id="spadegym-verifiers", levels=str(levels), tasks=tasks,
                                                           seed=seed, hinted=hinted, max_turns=max_turns,
                                                           curriculum=str(curriculum)))


class SpadegymChatHarnessConfig(HarnessConfig):
    id: str = "spadegym_verifiers"


class SpadegymChatHarness(Harness[SpadegymChatHarnessConfig]):
    """One chat completion per segment, in process, through verifiers' interception endpoint."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data) -> ProgramResult:
        system, prompt = self.resolve_prompt(data)
        messages: list[dict] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt is not None:
            messages += [message_to_wire(m) for m in prompt]
        async with AsyncOpenAI(base_url=endpoint, api_key=secret) as client:
            await client.chat.completions.create(model=ctx.model, messages=messages)
        return ProgramResult(exit_code=0, stdout="", stderr="")


__all__ = ["SpadegymChatHarness", "SpadegymEnv", "SpadegymTaskset", "env_config"]
