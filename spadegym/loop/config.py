"""The run configuration: one validated model, read from TOML or YAML, overridable per field.

The defaults are the embedded default run: the mutation designer over the
built-in families, the built-in learner, the sandbox, the paper's blended
designer reward. LLM roles are two lines::

    designer = "openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1"
    agent = "openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1"
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    PlainSerializer,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from ..agents.learner.agent import LearnerConfig
from ..agents.openai_config import OpenAIAgentConfig
from ..agents.registry import AGENTS
from ..curriculum import BufferConfig
from ..designers.llm_config import LLMDesignerConfig
from ..designers.mutation import MutationConfig
from ..designers.pool import PoolConfig
from ..designers.registry import DESIGNERS
from ..designers.sources import SOURCES, ReasoningGymSource, Source, SourceConfig, shares
from ..errors import UserError
from ..executor import EXECUTORS, RayConfig
from ..families import ALL_SKILLS, SETTINGS, SKILLS
from ..rollout import RolloutConfig
from ..sandbox import SandboxConfig
from ..signals.rewards import REWARDS
from ..specs import Spec, near_name, spec_help
from ..train.config import TrainConfig
from ..validate.config import ValidationConfig
from ..watch import WatchConfig
from .trackers import TRACKERS, TrackingConfig

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class HeldoutConfig(BaseModel):
    """The held-out suites: what the agent is measured on and never trained on (see ``loop.heldout``)."""

    model_config = {"extra": "forbid"}

    suites: list[str] | None = Field(None, description="Suites to measure, the first one also with the hint and per family: in_distribution, frontier (past the hardest listed levels), edge_cases (held-out wording, layout, action names, start), unseen_families, path (the files of heldout.path). Unset: path alone when heldout.path is set, in_distribution alone when heldout.families is (a slow agent measured on a few), else the four built-in suites.")
    every: int = Field(4, ge=0, description="Evaluate the first suite every N rounds (0: only at the end).")
    suites_every: int = Field(0, ge=0, description="Evaluate every suite at the end of every N rounds (0: only at the end); every suite is measured at the last round.")
    seeds: int = Field(4, ge=1, description="Held-out seeds per suite level.")
    levels: Literal["all", "ends", "easiest"] = Field("all", description="Listed levels of the built-in suites (the frontier suite is always one and two steps past the hardest): all; ends: lowest and highest only; easiest: level 0.")
    families: list[str] = Field(default_factory=list, description="Only these families (empty: all); a slow agent (an LLM on a CPU) is measured on a few.")
    unseen_families: list[str] | Literal["rotate"] = Field("rotate", description="Families held out of every designer's training and measured as the unseen_families suite: rotate (one per skill, chosen by the run's seed among the families heldout.families does not name; one of the setting's families where each skill has one, as in tool_use), a list of names, or [] (train on every family).")
    path: str | None = Field(None, description="A folder (or file) of environment files measured as the held-out suite 'path': a run on your own pool or source measured on your own held-out tasks.")
    hint: bool = Field(True, description="Also measure the first suite's success with the hint (hint arm).")
    seed: int | None = Field(None, description="Seeds the held-out instances and the agent's sampling on them; unset: the run's seed. Give several runs one value to score them on the same instances.")

    @field_validator("suites")
    @classmethod
    def _known_suites(cls, value: list[str] | None) -> list[str] | None:
        from .heldout import check_suites

        if value is not None and not value:
            raise ValueError("name at least one suite (or leave it unset for the default suites)")
        return None if value is None else check_suites(value)

    @model_validator(mode="after")
    def _path_named(self) -> HeldoutConfig:
        if self.suites and "path" in self.suites and not self.path:
            raise ValueError("the suite 'path' measures the files of heldout.path: set heldout.path to a folder")
        return self

    def suite_names(self) -> list[str]:
        """The suites measured, in order (the defaults resolved)."""
        from .heldout import BUILT_IN_SUITES

        if self.suites is not None:
            return list(self.suites)
        return ["path"] if self.path else ["in_distribution"] if self.families else list(BUILT_IN_SUITES)

    def unseen(self, seed: int, skills: tuple[str, ...] = SKILLS) -> list[str]:
        """The families held out of training in a run of ``seed`` (never one ``families`` names, under rotate;
        one per skill of ``skills``, the run's setting)."""
        from .heldout import unseen_families

        return unseen_families(self.unseen_families, seed, keep=self.families, skills=skills)


class LLMRoleConfig(BaseModel):
    """Sampling settings for roles played by an OpenAI-compatible model."""

    model_config = {"extra": "forbid"}

    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the API key.")
    temperature: float = Field(0.7, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(2048, ge=1, description="Largest completion per call.")
    concurrency: int = Field(32, ge=1, description="Requests in flight at once.")
    timeout_s: float = Field(120.0, gt=0, description="Deadline for one call.")
    retries: int = Field(4, ge=0, description="Retries on 429, 5xx, timeouts and connection errors.")
    backoff_s: float = Field(0.5, ge=0, description="First retry delay; doubles each retry (with jitter).")


def _spec_type(parse: Any) -> Any:
    """A spec field: written as text, parsed once (by its role's registry) into a ``Spec``, stored as text."""
    return Annotated[Spec, BeforeValidator(parse), PlainSerializer(str, return_type=str),
                     WithJsonSchema({"type": "string"})]


def _reward_spec(value: Any) -> Spec:
    spec = REWARDS.parse(value)
    REWARDS.make(spec)  # your own function must import now, not in the first round
    return spec


#: The roles of a run, each with its registry.
RUN_ROLES = {"agent": AGENTS, "designer": DESIGNERS, "source": SOURCES}
AgentSpec = _spec_type(AGENTS.parse)
DesignerSpec = _spec_type(DESIGNERS.parse)
RewardSpec = _spec_type(_reward_spec)
#: The config sections only an executor reads.
EXECUTOR_SECTIONS = {"ray": "ray"}


def unread_setting(config: BaseModel, roles: dict[str, Any], used: list[tuple[str, Spec]], *,
                   executor: str | None = None, whole: str = "run") -> str | None:
    """One sentence naming the first setting of ``config`` (changed from its default) that no part it ``used``
    (role, spec) reads, or None. ``roles``: each role's registry, whose kinds declare the sections they read."""
    fields = type(config).model_fields
    read = {section for role, spec in used for section in roles[role].kind(spec).sections}
    readers: dict[str, list[str]] = {}
    for role, registry in roles.items():
        for kind in registry.kinds.values():
            for section in kind.sections:
                readers.setdefault(section, []).append(f"{role} {kind.form}")
    for section, who in readers.items():
        if section in read or section not in fields:
            continue
        changed = _changed(getattr(config, section), fields[section].get_default(call_default_factory=True), section)
        if changed is not None:
            using = ", ".join(f"{role} '{spec}'" for role, spec in used)
            return (f"'{changed}' is read only by {' or '.join(who)}, and this {whole} uses {using}; "
                    "drop the setting or change the part it is for")
    for section, kind in EXECUTOR_SECTIONS.items():
        if section in fields and executor != kind:
            changed = _changed(getattr(config, section), fields[section].get_default(call_default_factory=True),
                               section)
            if changed is not None:
                return (f"'{changed}' is read only by executor {kind}, and this {whole}'s is {executor}; "
                        "drop the setting")
    return None


def _changed(value: Any, default: Any, path: str) -> str | None:
    """The dotted path of the first setting under ``path`` that differs from its default, or None."""
    if isinstance(value, BaseModel) and isinstance(default, BaseModel):
        for name in type(value).model_fields:
            found = _changed(getattr(value, name), getattr(default, name), f"{path}.{name}")
            if found is not None:
                return found
        return None
    return None if value == default else path


class RunConfig(BaseModel):
    """Everything a self-play run needs; `spadegym run --print-config` shows the effective values."""

    model_config = {"extra": "forbid"}

    seed: int = Field(0, description="Seeds everything: designer, learner, instance seeds.")
    rounds: int = Field(36, ge=1, description="Self-play rounds to run (a resumed run continues to this total).")
    time_limit_s: float | None = Field(None, gt=0, description="Stop after the round that crosses this many seconds.")
    designer: DesignerSpec = Field(Spec("mutation"), description=spec_help("designer"))
    pool: PoolConfig = Field(default_factory=PoolConfig, description="Environment files to play (a SPADE pool, say): the fixed pool of designer 'pool', or the first levels of any other designer.")
    sources: list[Source] = Field(default_factory=list, description="Level sources proposing beside the designer in every round, each by its share: reasoning-gym:TASK (its curriculum attributes are knobs the mutation designer steps), a pool directory, openenv:URL (a remote level).")
    agent: AgentSpec = Field(Spec("learner"), description=spec_help("agent"))
    designer_reward: RewardSpec = Field(Spec("blend"), description=spec_help("designer_reward"))
    setting: Literal["games", "tool_use"] = Field("games", description="The paper's setting the run trains in: games (cognitive games) or tool_use (multi-turn tool use); it picks the default skills and the built-in families of the held-out suites.")
    skills: list[str] = Field(default_factory=lambda: list(SKILLS), description="Skills the designer targets (default: the setting's six).")
    skills_per_round: int = Field(3, ge=1, description="Skills active per round, rotating (paper: 3 of 6).")
    envs_per_round: int = Field(16, ge=1, description="Environments played per round (new + replayed).")
    plays: int = Field(16, ge=1, description="Plays per environment without the hint (G).")
    hint_plays: int = Field(16, ge=0, description="Plays per environment with the hint (H).")
    group_size: int = Field(8, ge=1, description="Plays sharing one instance seed (a GRPO group).")
    train_on_hint: bool | None = Field(None, description="Train the agent on hint plays too (default: yes for the learner, no for LLMs).")
    mutation: MutationConfig = Field(default_factory=MutationConfig, description="The mutation designer's settings (designer = \"mutation\").")
    llm_designer: LLMDesignerConfig = Field(default_factory=LLMDesignerConfig, description="The LLM designer's prompting, repair and hint settings (designer = \"openai:...\").")
    corpus: str | None = Field(None, description="JSONL corpus for the LLM designer (default: the shipped one).")
    learner: LearnerConfig = Field(default_factory=LearnerConfig, description="The built-in learner's model and optimiser (agent = \"learner\").")
    llm: LLMRoleConfig = Field(default_factory=LLMRoleConfig, description="Sampling and connection settings for roles played by an OpenAI-compatible model.")
    openai_agent: OpenAIAgentConfig = Field(default_factory=OpenAIAgentConfig, description="How the LLM agent plays: episode deadline, system prompt (agent = \"openai:...\").")
    train: TrainConfig = Field(default_factory=TrainConfig, description="How hf:PATH roles sample and learn (GRPO through TRL).")
    heldout: HeldoutConfig = Field(default_factory=HeldoutConfig, description="The held-out evaluation suite.")
    buffer: BufferConfig = Field(default_factory=BufferConfig, description="Level buffer (PLR/ACCEL).")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig, description="Episode settings.")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig, description="Sandbox limits and tier.")
    executor: Literal[EXECUTORS] = Field("local", description="Where validation and rollouts run: local (one sandbox in this process) or ray (actors that each own a sandbox; see ray).")
    ray: RayConfig = Field(default_factory=RayConfig, description="The Ray executor: cluster address, actors.")
    validation: ValidationConfig = Field(default_factory=ValidationConfig, description="The validation gate's settings (as for spadegym validate).")
    watch: WatchConfig = Field(default_factory=WatchConfig, description="The reward-hacking watch: probe plays of new levels, when a designer is flagged, and pricing its findings out of the designer reward.")
    # None by default, as in transformers and TRL: the run's store and report hold every figure, and a default
    # must work on the default install.
    report_to: list[str] = Field(default_factory=list, description=f"Where each round's scalars go besides the run's store and report, like TRL's report_to: any of {', '.join(TRACKERS)}; ['all'] for every one installed, [] or ['none'] (the default) for none. A tracker whose package is missing is skipped with a note; all of them work offline (see tracking).")
    tracking: TrackingConfig = Field(default_factory=TrackingConfig, description="The wandb and trackio trackers' project and modes (report_to).")

    @model_validator(mode="before")
    @classmethod
    def _older_tensorboard_switch(cls, data: Any) -> Any:
        """``tensorboard = false`` (the switch before ``report_to``) still loads, as tensorboard taken out of
        ``report_to``: trackers are chosen in one place."""
        if isinstance(data, dict) and "tensorboard" in data:
            data = dict(data)
            if data.pop("tensorboard") is False:
                from .trackers import TRACKERS, installed

                names = list(data.get("report_to") or [])
                if "all" in names:
                    names = [name for name in TRACKERS if installed(name)]
                data["report_to"] = [name for name in names if name != "tensorboard"]
        return data

    @field_validator("skills")
    @classmethod
    def _known_skills(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("name at least one skill")
        for skill in value:
            if skill not in ALL_SKILLS:
                raise ValueError(f"names {skill!r}, which is not a skill{near_name(skill, ALL_SKILLS)}; "
                                 f"use any of {', '.join(ALL_SKILLS)}")
        return value

    @model_validator(mode="after")
    def _setting_skills(self) -> RunConfig:
        """Skills left unset are the setting's six (the paper's games skills, or its tool-use skills)."""
        if "skills" not in self.model_fields_set:
            self.skills = list(SETTINGS[self.setting])
        return self

    @field_validator("report_to")
    @classmethod
    def _known_trackers(cls, value: list[str]) -> list[str]:
        wrong = [name for name in value if name not in (*TRACKERS, "all", "none")]
        if wrong:
            raise ValueError(f"{wrong[0]!r} is not a tracker; use any of {', '.join(TRACKERS)}, 'all' or 'none'")
        return value

    @field_validator("sources", mode="before")
    @classmethod
    def _stored_sources(cls, value: Any, info: ValidationInfo) -> Any:
        """A run stored before sources had a model per kind wrote every setting of every kind: keep each
        source's own."""
        if not (info.context or {}).get("stored") or not isinstance(value, list):
            return value
        return [{k: v for k, v in item.items() if SOURCES.kind(item.get("source", "")).takes(k)}
                if isinstance(item, dict) else item for item in value]

    @field_validator("sources")
    @classmethod
    def _shares_fit(cls, value: list[SourceConfig]) -> list[SourceConfig]:
        shares(value)  # raises when they add up to more than a round
        return value

    @field_validator("heldout")
    @classmethod
    def _known_families(cls, value: HeldoutConfig) -> HeldoutConfig:
        from ..families import get_family

        for name in [*value.families, *([] if value.unseen_families == "rotate" else value.unseen_families)]:
            get_family(name)  # an unknown name raises with the nearest known one
        return value

    def training_exclusions(self) -> list[str]:
        """The built-in families no designer of this run may train on (``heldout.unseen_families``)."""
        return self.heldout.unseen(self.seed, SETTINGS[self.setting])

    def designer_exclusions(self) -> list[str]:
        """The built-in families no designer of this run may draw: the unseen ones and the other setting's."""
        from ..families import list_families

        other = [f.name for f in list_families() if f.setting != self.setting]
        return [*self.training_exclusions(), *other]

    @model_validator(mode="after")
    def _every_setting_applies(self, info: ValidationInfo) -> RunConfig:
        """A setting that no part of this run reads is refused, in one sentence (a stored run is taken as it is)."""
        if (info.context or {}).get("stored"):
            return self
        if self.validation.sandbox != SandboxConfig():
            raise ValueError("'validation.sandbox' is not read in a run: the gate validates in the run's own "
                             "sandbox; set sandbox.* instead")
        used = [("agent", self.agent), ("designer", self.designer), *(("source", SOURCES.parse(s.source))
                                                                     for s in self.sources)]
        unread = unread_setting(self, RUN_ROLES, used, executor=self.executor)
        if unread is not None:
            raise ValueError(unread)
        return self

    @model_validator(mode="after")
    def _preload_imported_tasks(self) -> RunConfig:
        """A reasoning-gym source's files import reasoning_gym: the sandbox's zygote imports it once, not each worker."""
        from ..families.imported import MODULE

        if any(isinstance(s, ReasoningGymSource) for s in self.sources) and MODULE not in self.sandbox.preload:
            self.sandbox = self.sandbox.model_copy(update={"preload": [*self.sandbox.preload, MODULE]})
        return self

    @model_validator(mode="after")
    def _baseline_buffer(self) -> RunConfig:
        """A baseline designer's levels are played as the baseline intends (a fixed pool replayed
        whole, never retired; fresh draws never replayed), and a pool of seed levels fits the buffer
        whole beside the designer's levels, except where the buffer was set by hand."""
        from ..designers.pool import pool_files
        from ..designers.sampler import SAMPLER_KINDS, baseline_overrides, pool_overrides

        intended: dict[str, Any] = {}
        if self.designer.kind == "pool":
            if not self.pool.path:
                raise ValueError("the 'pool' designer plays the files of the pool: give the directory with "
                                 "--pool DIR (or pool.path = \"DIR\")")
            intended = pool_overrides(len(pool_files(self.pool.path)))
        elif self.designer.kind in SAMPLER_KINDS:
            intended = baseline_overrides(self.designer, exclude=self.designer_exclusions())
        elif self.pool.path:  # seed levels: the buffer keeps the whole pool beside the designer's own levels
            intended = {"capacity": BufferConfig.model_fields["capacity"].default + len(pool_files(self.pool.path))}
        if intended:
            update = {k: v for k, v in intended.items() if k not in self.buffer.model_fields_set}
            if update:
                self.buffer = self.buffer.model_copy(update=update)
        return self


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read config file {path} ({exc.strerror}); check the path.") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text)
    except (yaml.YAMLError, ValueError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"config file {path} does not parse ({' '.join(str(exc).split())[:160]}).") from None
    if not isinstance(data, dict):
        raise UserError(f"config file {path} must hold a table of settings at the top level.")
    return data


def _set_path(data: dict[str, Any], dotted: str, raw: str) -> None:
    """Apply ``a.b=value`` (value parsed as JSON when it parses, else kept as text)."""
    keys = dotted.split(".")
    node = data
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise UserError(f"--set {dotted}: '{key}' is not a section.")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    node[keys[-1]] = value


def read_settings(path: str | Path | None, overrides: dict[str, Any] | None, sets: list[str] | None,
                  example: str) -> dict[str, Any]:
    """A config file's settings (TOML, YAML or JSON; optional), then command-line values (None: not given), then
    ``--set key=value`` items (a malformed one is one sentence showing ``example``); a run's and a search's."""
    data: dict[str, Any] = _read(Path(path)) if path else {}
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    for item in sets or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise UserError(f"--set '{item}' must look like key=value (e.g. --set {example}).")
        _set_path(data, key.strip(), raw.strip())
    return data


def unknown_setting(loc: tuple, model: type[BaseModel]) -> str:
    """``is not a known setting``, with the nearest known name of its section written in full (``buffer.capacity``,
    not ``capacity``), as the user writes it in ``--set``."""
    near = difflib.get_close_matches(str(loc[-1]), _known_fields(loc[:-1], model), n=1)
    return "is not a known setting" + (f"; did you mean '{'.'.join([*map(str, loc[:-1]), near[0]])}'?" if near else "")


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None,
                sets: list[str] | None = None) -> RunConfig:
    """Read a config file (or the defaults), apply overrides, validate with one-sentence errors."""
    data = read_settings(path, overrides, sets, "buffer.capacity=128")
    return validate_config(data, source=str(path) if path else "the command line")


def validate_config(data: dict[str, Any], source: str = "config", *, stored: bool = False) -> RunConfig:
    """``data`` as a run's config, or one sentence naming the setting that is wrong; ``stored``: the config a run
    wrote (taken as it is: an older run may hold settings a newer check refuses)."""
    try:
        return RunConfig.model_validate(data, context={"stored": stored})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        if loc[:1] == ("sources",) and len(loc) > 2 and loc[2] in SOURCES.kinds:  # a source's settings: its kind's
            kind, loc = SOURCES.kinds[str(loc[2])], loc[:2] + loc[3:]
            err = {**err, "loc": loc}
            if err["type"] == "extra_forbidden":
                takes = list(kind.options_model().model_fields)
                raise UserError(f"{source}: '{'.'.join(map(str, loc))}' does not apply to {kind.name} sources"
                                f"{near_name(str(loc[-1]), takes)}; they take {', '.join(takes)}.") from None
        where = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")  # a validator's own sentence, as it wrote it
        if err["type"] == "extra_forbidden":
            message = unknown_setting(tuple(err["loc"]), RunConfig)
        subject = f"'{where}' " if where else ""  # a check across settings names no one field
        raise UserError(f"{source}: {subject}{message.rstrip('.')} (see `spadegym run --print-config` for all fields).") from None


def _known_fields(loc: tuple, model: Any = RunConfig) -> list[str]:
    """The field names of the section at ``loc`` of ``model`` (empty when ``loc`` names no section)."""
    for part in loc:
        field = model.model_fields.get(part)
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return []
        model = field.annotation
    return list(model.model_fields)
