"""The executor seam: where the loop's environment code runs.

The loop owns rounds, the store and the learner; an executor owns the
sandboxes. It does two things for the loop:

    validate   judge a batch of levels -> one Verdict each, in order (files by the gate in a
               sandbox, remote levels by what the wire allows)
    host       where episodes' levels are opened (``run_episodes`` takes it): files in the
               sandbox, remote levels over OpenEnv (``LevelHost``)

``LocalExecutor`` is one Sandbox in this process. ``RayExecutor``
(``ray_actors.py``) spreads both over Ray actors that each own a sandbox; the
loop does not know which one it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, Field

from ..level import Level
from ..sandbox import Outcome

EXECUTORS = ("local", "ray")


class RayConfig(BaseModel):
    """The Ray executor (``executor = "ray"``)."""

    model_config = {"extra": "forbid"}

    address: str | None = Field(None, description="Cluster to join (ray.init address: 'auto', 'ray://head:10001', ...); unset: start a local one, or use the one this process already started.")
    actors: int = Field(2, ge=1, description="Sandbox actors; each owns a zygote and its workers on its node.")
    cpus_per_actor: float = Field(1.0, ge=0, description="CPUs Ray reserves for each actor.")
    retries: int = Field(2, ge=0, description="Times work lost with a dead actor is redone on another before it counts as an infrastructure failure.")


class FileHost(Protocol):
    """Where environment files run (a ``Sandbox``, or the Ray actors' host): ``open`` a file, ``gather`` replies.

    ``episodes_per_worker``: how many instances of one file a worker of this host may serve at once;
    ``open(..., share=n)`` asks for that (1: a worker per episode, what every host can do).
    """

    episodes_per_worker: int

    def open(self, source: str, filename: str = "<env>", max_turns: int | None = None, share: int = 1) -> Any: ...

    def gather(self, pendings: list[Any]) -> list[Outcome]: ...


class EnvHost(Protocol):
    """Where episodes' levels are opened: ``open`` a handle of a level, ``gather`` the replies to its requests."""

    episodes_per_worker: int

    def open(self, level: Level, filename: str = "<env>", max_turns: int | None = None, share: int = 1) -> Any: ...

    def gather(self, pendings: list[Any]) -> list[Outcome]: ...


@dataclass
class HostRequest:
    """One request of a handle whose host sends it (``host.gather``), not the sandbox itself."""

    handle: Any
    op: str
    args: dict[str, Any]


class HostedHandle:
    """``submit`` and ``request`` of a handle that its ``host`` serves (Ray actors, OpenEnv sessions)."""

    host: Any
    pending_load: None = None  # its host loads the level with its first request: nothing to settle

    def submit(self, op: str, **args: Any) -> HostRequest:
        return HostRequest(self, op, args)

    def request(self, op: str, **args: Any) -> Outcome:
        return self.host.gather([self.submit(op, **args)])[0]


class Executor(Protocol):
    """Runs the loop's validation and hosts its episodes' levels."""

    name: str
    host: EnvHost  # a ``hosts.LevelHost``

    def validate(self, levels: Sequence[Level], config: Any, names: Sequence[str] | None = None) -> list[Any]:
        """One ``Verdict`` per level, in the order of ``levels``; ``names`` (default ``level.py``) name them in it."""
        ...

    def counters(self) -> dict[str, int]:
        """Infrastructure events so far (actors lost, work redone, faults on the wire); never environment failures."""
        ...

    def describe(self) -> str:
        """Where the work runs, in a few words (for the run's first line)."""
        ...

    def close(self) -> None: ...
