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

The kind of a source is read once from its ``source`` (``SOURCES``), and each
kind's settings are a model of their own: a setting of another kind (``hint``
on a reasoning-gym task) is refused in one sentence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from ..envfile.reference import unsupported_source
from ..errors import UserError
from ..families import SKILLS
from ..level import Level, Remote, RemoteOptions
from ..rollout import derive_seed
from ..specs import Kind, Registry, Spec, form, spec_help
from .base import Designer
from .mixed import SourcePart

#: The kinds of source, read from a source's spec: a pool is any spec without a kind's prefix.
REASONING_GYM, OPENENV, POOL = "reasoning-gym", "openenv", "pool"


class SourceConfig(BaseModel):
    """What every level source of a run takes, beside its designer."""

    model_config = {"extra": "forbid"}

    source: str = Field(..., description=spec_help("source"))
    share: float | None = Field(None, gt=0, le=1, description="Its share of the new levels it can propose (a reasoning-gym task: those of its skill); unset: the designer and the sources without a share split what the others leave equally.")


class ReasoningGymSource(SourceConfig):
    """``reasoning-gym:TASK``: a task whose curriculum attributes are knobs the mutation designer steps."""

    instances: int = Field(100_000, ge=1, description="Instances of the task's generator a level draws from (its reset seed picks one, generated on demand).")


class PoolSource(SourceConfig):
    """A pool directory or file: its files, in order, once each."""


class OpenEnvSource(RemoteOptions, SourceConfig):
    """``openenv:URL``: an OpenEnv server as a remote level, checked over the wire."""

    skill: str | None = Field(None, description="The skill the remote level trains (unset: the run's first skill).")
    hint: str | None = Field(None, description="The hint its hint arm shows (unset: none, so its regret is not measured).")

    @field_validator("skill")
    @classmethod
    def _known_skill(cls, value: str | None) -> str | None:
        if value is not None and value not in SKILLS:
            raise ValueError(f"{value!r} is not a skill; use one of {', '.join(SKILLS)}")
        return value

    @model_validator(mode="after")
    def _remote_settings(self) -> OpenEnvSource:
        """The URL and settings are checked where the configuration is read (one sentence each)."""
        try:
            self.remote_level_settings()
        except ValidationError as exc:
            error = exc.errors()[0]
            field = "the URL" if error["loc"] == ("url",) else ".".join(map(str, error["loc"]))
            raise ValueError(f"{field}: {str(error['msg']).removeprefix('Value error, ')}") from None
        return self

    def remote_level_settings(self) -> Remote:
        """The ``level.Remote`` this source names."""
        return Remote(url=SOURCES.parse(self.source).argument,
                      **{name: getattr(self, name) for name in RemoteOptions.model_fields})


class UnknownSource(UserError, ValueError):
    """A source spec that names nothing spadegym reads (the message is one sentence)."""


SOURCES: Registry[Any] = Registry("source", [
    Kind(REASONING_GYM, form("source", REASONING_GYM), None, ReasoningGymSource, argument="required", needs="a task",
         sections=("mutation",)),
    Kind(OPENENV, form("source", OPENENV), None, OpenEnvSource, argument="optional"),  # its URL is checked by Remote
    Kind(POOL, form("source", POOL), None, PoolSource, argument="optional"),
], error=UnknownSource, default_kind=POOL)


def source_kind(value: Any) -> str:
    """The kind of a source's settings, read from its ``source`` (an unreadable one is one sentence)."""
    text = str(value.get("source", "") if isinstance(value, dict) else value.source)
    if (unsupported := unsupported_source(text)) is not None:
        raise UnknownSource(f"sources: {unsupported}")
    return SOURCES.parse(text).kind


#: One source's settings: the model of its kind.
Source = Annotated[Annotated[ReasoningGymSource, Tag(REASONING_GYM)] | Annotated[PoolSource, Tag(POOL)] | Annotated[OpenEnvSource, Tag(OPENENV)], Discriminator(source_kind)]


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
    spec = SOURCES.parse(config.source)
    if isinstance(config, ReasoningGymSource):
        return _task_part(spec, config, share, seed=seed, mutation=mutation)
    if isinstance(config, OpenEnvSource):
        return _remote_part(spec, config, share, skills=skills)
    return _pool_part(spec, share)


def _task_part(spec: Spec, config: ReasoningGymSource, share: float, *, seed: int, mutation: Any) -> SourcePart:
    from ..families.imported import TaskFamily
    from .mutation import MutationConfig, MutationDesigner

    family = TaskFamily(spec.argument, instances=config.instances)
    settings = MutationConfig.model_validate(mutation or {}).model_copy(update={"families": None})
    designer: Designer = MutationDesigner(seed=derive_seed(seed, "source", config.source.strip()), config=settings,
                                          families=[family])
    designer.name = family.name  # type: ignore[misc] - each part reports under its source's name
    return SourcePart(family.name, designer, share, frozenset({family.skill}), lists_actions=False)


def _remote_part(spec: Spec, config: OpenEnvSource, share: float, *, skills: list[str]) -> SourcePart:
    from .remote import RemoteLevelDesigner

    remote = config.remote_level_settings()
    level = Level(remote=remote, skill=config.skill or (skills or ["Logical Deduction"])[0], hint=config.hint)
    return SourcePart(f"openenv:{remote.url}", RemoteLevelDesigner([level]), share)


def _pool_part(spec: Spec, share: float) -> SourcePart:
    from .pool import PoolDesigner, pool_files

    path = Path(spec.argument)
    return SourcePart(f"pool:{path.name or spec.argument}", PoolDesigner(pool_files(path, f"source {spec.argument!r}")),
                      share)
