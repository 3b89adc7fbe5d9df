"""TRL's GRPOTrainer on spadegym's live curriculum, in one process or under ``accelerate launch``.

    args = GRPOConfig(..., num_generations=4)
    with trl_curriculum("curriculum.toml", "runs/trl", args) as curriculum:
        trainer = GRPOTrainer(model=model, args=args, processing_class=tokenizer, reward_funcs=[reply_reward],
                              train_dataset=curriculum.dataset, environment_factory=curriculum.environment_factory)
        trainer.train()

The main process holds the curriculum (``loop.driven``: the config's designer,
gate, buffer, designer reward and watch, the run store in ``run_dir``) and
serves it on 127.0.0.1; accelerate's own broadcast hands every process its
address and token. Each rollout draws its slot when TRL resets it, with the
dataset row's ``ticket`` (the generations of one prompt, spread over the
processes, play one level and seed), and reports the play when TRL scores it
(``get_reward``).

The hint arm is played by the trained model: a slot of the hint arm shows the
hint line, and its rollouts score ``None`` from every reward function here,
which TRL treats as unscorable (advantage 0): they measure the regret of the
policy being trained, under its own sampling, and never train it.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..errors import UserError
from .curriculum_client import CurriculumClient, CurriculumPlay
from .trl_env import SYSTEM_PROMPT, SpadegymToolEnv


class CurriculumToolEnv(SpadegymToolEnv):
    """One rollout's environment, drawn from the curriculum: ``reset(ticket=...)``, the ``act`` tool, ``get_reward``."""

    def __init__(self, play: CurriculumPlay):  # noqa: D107 - the base's session is the play's, made at reset
        self._play = play
        self._return: float | None = None
        self._valid_actions: list[str] | None = None
        self._acted = False

    def reset(self, ticket: str = "", **row: Any) -> str:
        from .trl_env import INSTRUCTIONS

        first = self._play.start(str(ticket))
        self._session = self._play.session
        self._return, self._acted = None, False
        self._valid_actions = first.info.get("valid_actions")
        return f"{INSTRUCTIONS}\n\n{first.observation}"

    def get_reward(self) -> float | None:
        """The play's return (reported to the curriculum here, once); ``None`` for the hint arm (no loss)."""
        self._play.finish()
        return None if self._hinted else super().get_reward()

    def _score_reply(self, reply: str) -> float | None:
        score = super()._score_reply(reply)  # a reply that names an action is played either way
        return None if self._hinted else score

    @property
    def _hinted(self) -> bool:
        return bool(self._play.draw and self._play.draw.hinted)


class TrainerCurriculum:
    """What a TRL script passes to ``GRPOTrainer``: ``dataset`` and ``environment_factory``; ``close`` at the end."""

    def __init__(
        self,
        client: CurriculumClient,
        stack: ExitStack,
        state: Any,
        *,
        rows: int,
        prompt: str,
        system: str,
        max_turns: int,
    ):
        self.client, self._stack, self._state = client, stack, state
        self.max_turns = max_turns
        self.dataset = ticket_dataset(rows, prompt=prompt, system=system)

    def environment_factory(self) -> CurriculumToolEnv:
        return CurriculumToolEnv(
            CurriculumPlay(
                self.client, max_turns=self.max_turns, origin=f"process {self._state.process_index}"
            )
        )

    def status(self) -> dict[str, Any]:
        return self.client.status()

    def close(self) -> None:
        """Every process has reported (a barrier), then the main process stops the service and closes the store."""
        if self._state.num_processes > 1:
            self._state.wait_for_everyone()
        self._stack.close()

    def __enter__(self) -> TrainerCurriculum:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ticket_dataset(rows: int, *, prompt: str = "", system: str = SYSTEM_PROMPT):
    """``rows`` conversational prompts, each with its ``ticket`` (the row's id): the curriculum draws by ticket."""
    from datasets import Dataset

    return Dataset.from_dict(
        {
            "prompt": [
                [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
                for _ in range(rows)
            ],
            "ticket": [str(i) for i in range(rows)],
        }
    )


def trl_curriculum(
    config: str | Path | None,
    run_dir: str | Path,
    args: Any,
    *,
    rows: int = 4096,
    prompt: str = "",
    system: str = SYSTEM_PROMPT,
    max_turns: int = 25,
) -> TrainerCurriculum:
    """The curriculum of ``config`` (a ``spadegym run`` config file) in ``run_dir`` (new, or resumed), for a
    GRPOTrainer with ``args`` (its ``num_generations`` is the curriculum's group size). Call it in every process,
    after ``args`` is made (accelerate's state is set up then)."""
    import trl
    from accelerate import PartialState
    from accelerate.utils import broadcast_object_list

    from ..loop.driven import driven_curriculum
    from .curriculum_service import CurriculumService

    state = PartialState()
    local = int(os.environ.get("LOCAL_WORLD_SIZE", state.num_processes))
    if local != state.num_processes:
        raise UserError(
            "the curriculum is served on 127.0.0.1, so every trainer process must run on this machine "
            f"({state.num_processes} processes, {local} here); launch on one node."
        )
    stack = ExitStack()
    address: list[Any] = [None, None, None]
    if state.is_main_process:
        try:
            curriculum = stack.enter_context(
                driven_curriculum(
                    config, run_dir, generations=args.num_generations, trainer=f"trl {trl.__version__}"
                )
            )
            service = stack.enter_context(CurriculumService(curriculum))
            address = [service.url, service.token, None]
        except UserError as exc:
            stack.close()
            address = [None, None, str(exc)]
    if state.num_processes > 1:  # the others wait here for the main process's address (or its error)
        broadcast_object_list(address, from_process=0)
    url, token, error = address
    if error is not None:
        raise UserError(error)
    client = CurriculumClient(url, token)
    client.status()  # reachable now, or one sentence
    return TrainerCurriculum(
        client, stack, state, rows=rows, prompt=prompt, system=system, max_turns=max_turns
    )
