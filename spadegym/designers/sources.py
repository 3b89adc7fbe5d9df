"""A run's level sources beside its designer (the ``sources`` section of a run's config).

    [[sources]]
    source = "reasoning-gym:chain_sum"    # a reasoning-gym task: its curriculum attributes are the knobs
    share = 0.25                          # of each round's new levels (default: equal with the designer)

    [[sources]]
    source = "pools/imported"             # a pool: its files, in order, once each

    [[sources]]
    source = "openenv:http://127.0.0.1:8000"   # a remote level: an OpenEnv server

Each source is a designer of its own, so one curriculum draws them beside the
run's designer (``mixed.MixedDesigner``): a reasoning-gym task is mutated by
the mutation designer like a built-in family (its knobs step harder as the
agent outgrows its levels); a pool is a ``PoolDesigner``; an OpenEnv URL is a
remote level (``executor.openenv``), checked over the wire instead of by the gate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from ..envfile.reference import unsupported_source
from ..errors import UserError
from ..families import SKILLS
from ..families.imported import REASONING_GYM
from ..rollout import derive_seed
from .base import Designer
from .mixed import SourcePart

#: A source spec naming an OpenEnv environment server: ``openenv:URL``.
OPENENV = "openenv:"
SOURCE_SPECS = (f"{REASONING_GYM}TASK", "a pool directory or file", f"{OPENENV}URL")


class SourceConfig(BaseModel):
    """One level source of a run, beside its designer."""

    model_config = {"extra": "forbid"}

    source: str = Field(..., description=f"{' | '.join(SOURCE_SPECS)}")
    share: float | None = Field(None, gt=0, le=1, description="Its share of the new levels it can propose (a reasoning-gym task: those of its skill); unset: the designer and the sources without a share split what the others leave equally.")
    instances: int = Field(100_000, ge=1, description="reasoning-gym: instances of the task's generator a level draws from (its reset seed picks one, generated on demand).")
    skill: str | None = Field(None, description="openenv: the skill the remote level trains (unset: the run's first skill).")
    hint: str | None = Field(None, description="openenv: the hint its hint arm shows (unset: none, so its regret is not measured).")
    action_key: str = Field("message", description="openenv: the action field the server expects.")
    send_reply: bool = Field(False, description="openenv: send the agent's whole reply, not its boxed action (servers that parse replies, as spadegym serve does).")
    reset_args: dict[str, Any] = Field(default_factory=dict, description="openenv: extra reset arguments (e.g. a level_id).")
    max_turns: int = Field(25, ge=1, description="openenv: the turn budget of one episode.")

    @property
    def remote(self) -> bool:
        """Whether it names a remote level (played over the wire, not in the sandbox)."""
        return self.source.strip().startswith(OPENENV)

    @model_validator(mode="after")
    def _remote_settings(self) -> SourceConfig:
        """A remote level's URL and settings are checked where the configuration is read (one sentence each)."""
        if self.remote:
            try:
                self.remote_level_settings()
            except ValidationError as exc:
                error = exc.errors()[0]
                field = "the URL" if error["loc"] == ("url",) else ".".join(map(str, error["loc"]))
                raise ValueError(f"{field}: {str(error['msg']).removeprefix('Value error, ')}") from None
        return self

    def remote_level_settings(self) -> Any:
        """The ``level.Remote`` this source names (for an ``openenv:URL`` source)."""
        from ..level import Remote

        return Remote(url=self.source.strip()[len(OPENENV):], action_key=self.action_key, send_reply=self.send_reply,
                      reset_args=self.reset_args, max_turns=self.max_turns)

    @field_validator("skill")
    @classmethod
    def _known_skill(cls, value: str | None) -> str | None:
        if value is not None and value not in SKILLS:
            raise ValueError(f"{value!r} is not a skill; use one of {', '.join(SKILLS)}")
        return value


def shares(sources: list[SourceConfig]) -> tuple[float, list[float]]:
    """The run designer's share and each source's: explicit ones as given; the designer and the unset
    ones split the rest equally."""
    given = sum(s.share for s in sources if s.share is not None)
    if given > 1 + 1e-9:
        raise ValueError(f"the sources' shares add up to {given:g}; they are fractions of a round's new levels, "
                         "so together at most 1")
    unset = [s for s in sources if s.share is None]
    rest = (1.0 - given) / (len(unset) + 1)
    return rest, [rest if s.share is None else s.share for s in sources]


def source_parts(sources: list[SourceConfig], *, seed: int = 0, skills: list[str] | None = None,
                 mutation: Any = None) -> tuple[float, list[SourcePart]]:
    """The run designer's share and one part per source (a source that cannot be read fails in one sentence)."""
    main_share, part_shares = shares(sources)
    parts: list[SourcePart] = []
    for config, share in zip(sources, part_shares):
        part = _part(config, share, seed=seed, skills=skills or [], mutation=mutation)
        names = {p.name for p in parts}
        if part.name in names:
            raise UserError(f"sources: {config.source!r} is listed twice; list each source once.")
        parts.append(part)
    return main_share, parts


def _part(config: SourceConfig, share: float, *, seed: int, skills: list[str], mutation: Any) -> SourcePart:
    spec = config.source.strip()
    if (unsupported := unsupported_source(spec)) is not None:
        raise UserError(f"sources: {unsupported}")
    if spec.startswith(REASONING_GYM):
        from ..families.imported import TaskFamily
        from .mutation import MutationConfig, MutationDesigner

        family = TaskFamily(spec[len(REASONING_GYM):].strip(), instances=config.instances)
        settings = MutationConfig.model_validate(mutation or {}).model_copy(update={"families": None})
        designer: Designer = MutationDesigner(seed=derive_seed(seed, "source", spec), config=settings,
                                              families=[family])
        designer.name = family.name  # type: ignore[misc] - each part reports under its source's name
        return SourcePart(family.name, designer, share, frozenset({family.skill}), lists_actions=False)
    if config.remote:
        from ..level import Level
        from .remote import RemoteLevelDesigner

        remote = config.remote_level_settings()
        level = Level(remote=remote, skill=config.skill or (skills or ["Logical Deduction"])[0], hint=config.hint)
        return SourcePart(f"{OPENENV}{remote.url}", RemoteLevelDesigner([level]), share)
    from .pool import PoolDesigner, pool_files

    path = Path(spec)
    return SourcePart(f"pool:{path.name or spec}", PoolDesigner(pool_files(path, f"source {spec!r}")), share)
