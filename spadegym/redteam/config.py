"""The red-team configuration: one validated model, every knob with a help line.

    config = RedTeamConfig(target="openai:qwen3-8b@http://127.0.0.1:8000/v1", budget=200)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    PlainSerializer,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from ..agents.registry import AGENTS
from ..designers.base import SKILLS
from ..designers.mutation import MutationConfig
from ..designers.registry import DESIGNERS
from ..errors import UserError
from ..executor.base import EXECUTORS, RayConfig
from ..families import ALL_SKILLS
from ..loop.config import (
    AgentSpec,
    LLMRoleConfig,
    RewardSpec,
    read_settings,
    unknown_setting,
    unread_setting,
)
from ..rollout import RolloutConfig
from ..sandbox import SandboxConfig
from ..specs import Spec
from ..train.config import TrainConfig
from ..validate import ValidationConfig

#: The mutation designer's defaults in a search, under whatever the user sets: a search needs no curriculum. Its
#: fresh levels keep the families' listed wording, layout and menu (``vary_fresh``): a search of the variation
#: space is a choice of its own.
SEARCH_MUTATION = {"fresh_uniform": True, "directed": False, "novelty_draws": 16, "min_novelty": 0.01, "climb": True,
                   "vary_fresh": False}


#: The red team's own designers (``search``: redteam/search.py; ``uniform``: redteam/space.py), which draw from
#: the search's space; any other designer spec is the designers registry's.
SEARCH_DESIGNERS = ("search", "uniform")


def _designer_spec(value: Any) -> Spec:
    if isinstance(value, str) and value.strip() in SEARCH_DESIGNERS:
        return Spec(value.strip())
    return value if isinstance(value, Spec) else DESIGNERS.parse(value)


SearchDesignerSpec = Annotated[Spec, BeforeValidator(_designer_spec), PlainSerializer(str, return_type=str),
                               WithJsonSchema({"type": "string"})]


class RedTeamConfig(BaseModel):
    """Everything ``redteam`` needs; the target is frozen, the designer hunts its failures."""

    model_config = {"extra": "forbid"}

    target: AgentSpec = Field(..., description="The agent under test (any agent spec: openai:MODEL@URL, hf:PATH, learner:RUN (a run directory: its last checkpoint) or learner:DIR, scripted:FILE, ...).")
    designer: SearchDesignerSpec = Field(Spec("search"), description="search (proposes only levels whose outcome the memory cannot tell yet: redteam/search.py) | uniform (draws levels uniformly from the same space: the baseline) | mutation | openai:MODEL[@BASE_URL].")
    space: Literal["full", "listed"] = Field("full", description="The family levels the search and uniform designers draw from: full (every knob's ladder with its extension past the listed levels, every choice of every variation dimension, held-out ones included) or listed (the listed knob values, the families' own wording, layout and menu).")
    reward: RewardSpec = Field(Spec("failure"), description="Designer reward by name (signals registry) or package.module:function; 'failure' = failure rate x feasibility.")
    novelty: float = Field(1.0, ge=0, description="Weight of the novelty bonus: a failure in a cluster with k earlier failures earns x (1 + novelty / (1 + k)).")
    allocate: Literal["yield", "even"] = Field("yield", description="How a learning designer's proposals are shared over the skills: yield (Thompson sampling on how often a skill's proposals found a new failure or lost some plays, so the budget flows to skills that keep yielding) or even (every skill its share, as the baselines always do).")
    avoid_known: bool = Field(True, description="Memory of found failures: a family level at or above a known minimal failure is proposed again (it would only repeat that failure) before it costs a validation or a play.")
    budget: int = Field(64, ge=1, description="Designer proposals in all (the search budget).")
    per_round: int = Field(8, ge=1, description="Proposals per round (the designer learns from its rewards between rounds).")
    skills: list[str] = Field(default_factory=lambda: list(SKILLS), description="Skills the designer targets.")
    families: list[str] | None = Field(None, description="Only these built-in families (for family designers); default: every family of the skills.")
    plays: int = Field(4, ge=1, description="No-hint plays of the target per level, one instance seed each.")
    hint_plays: int = Field(4, ge=0, description="Hinted plays of levels without solution(): the hint arm must win for the level to count as solvable.")
    max_win_rate: float = Field(0.5, ge=0, lt=1, description="A level is failed when the target wins at most this share of its plays.")
    won_at: float | None = Field(None, gt=0, le=1, description="A level the target wins at least this share of its plays is remembered as won, and the search takes every level it dominates as won too; default: any level not failed (above max_win_rate). A sampling target (a language model) wins some plays of levels it still fails: raise it (0.75, 1.0) so that a lucky win closes no region of the space.")
    min_feasibility: float = Field(0.5, gt=0, le=1, description="Levels without solution() count as solvable when the hinted arm wins at least this share.")
    minimise: bool = Field(True, description="Shrink each new failure to the simplest level that still fails.")
    simplify_turns: int = Field(2, ge=0, description="'Make it simpler, keep the failure' turns for LLM-written files.")
    backtrack: int = Field(8, ge=0, description="When the minimal form fails its fresh seeds only by chance, confirm up to this many less shrunk forms (back up the shrink path to the level first found): a form shrunk to where the target fails half its plays is often refused, and one a step or two less shrunk is the real failure.")
    confirm_seeds: int = Field(6, ge=1, description="Fresh instance seeds each kept failure is replayed on (flakiness), at most: the replays stop once those played settle the verdict.")
    confirm_plays: int = Field(2, ge=1, description="Plays per confirmation seed.")
    min_failure_rate: float = Field(0.3, ge=0, le=1, description="A case enters the suite only if the lower end of the 95% interval of its failure rate reaches this (else it failed by chance).")
    case_seeds: int = Field(4, ge=1, description="Instance seeds a case is scored on in `spadegym eval` (failing ones first).")
    pass_at: float = Field(0.5, gt=0, le=1, description="In eval, a case is passed when the agent wins at least this share of its plays.")
    max_cases: int = Field(100, ge=1, description="The most cases a suite keeps: the search ends once it holds this many.")
    seed: int = Field(0, description="Seeds the designer, the instance seeds and the target's sampling.")
    mutation: MutationConfig = Field(default_factory=lambda: MutationConfig(**SEARCH_MUTATION), description="The mutation designer's settings (designer = \"mutation\"); here fresh draws take any knob values, the most novel of 16 draws (farthest from the levels already tried), edits climb (one knob a step harder, or two at once: `climb`), since a search needs no curriculum, and no difficulty is proposed twice.")
    corpus: str | None = Field(None, description="JSONL corpus for the LLM designer (default: the shipped one).")
    llm: LLMRoleConfig = Field(default_factory=LLMRoleConfig, description="Settings for roles played by a model server.")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig, description="Episode settings.")
    train: TrainConfig = Field(default_factory=TrainConfig, description="How an hf:PATH target samples (its dtype, prompt and reply settings), as a run's [train] section; the target never trains.")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig, description="Sandbox limits and tier.")
    executor: Literal[EXECUTORS] = Field("local", description="Where validation and episodes run: local (one sandbox) or ray (sandbox actors), as in runs.")
    ray: RayConfig = Field(default_factory=RayConfig, description="The Ray executor's settings (executor = ray).")
    validation: ValidationConfig = Field(default_factory=ValidationConfig, description="The validation gate's settings (as for spadegym validate).")

    @field_validator("mutation", mode="before")
    @classmethod
    def _search_defaults(cls, value: Any) -> Any:
        return {**SEARCH_MUTATION, **value} if isinstance(value, dict) else value

    @field_validator("skills")
    @classmethod
    def _known_skills(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in ALL_SKILLS]
        if not value or unknown:
            raise ValueError(f"skills must be among {', '.join(ALL_SKILLS)}" + (f" (got {unknown[0]!r})" if unknown else ""))
        return value

    @field_validator("families")
    @classmethod
    def _known_families(cls, value: list[str] | None) -> list[str] | None:
        from ..families import get_family

        for name in value or []:
            get_family(name)  # FamilyError (a ValueError) names the nearest family
        return value

    @model_validator(mode="after")
    def _won_above_failed(self) -> RedTeamConfig:
        if self.won_at is not None and self.won_at <= self.max_win_rate:
            raise ValueError(f"won_at ({self.won_at}) must be above max_win_rate ({self.max_win_rate}): a level "
                             "cannot be both failed and won")
        return self

    @model_validator(mode="after")
    def _families_match_skills(self) -> RedTeamConfig:
        if self.families:
            from ..families import get_family

            self.skills = sorted({get_family(f).skill for f in self.families}, key=ALL_SKILLS.index)
        return self

    @model_validator(mode="after")
    def _every_setting_applies(self) -> RedTeamConfig:
        """A setting that neither the target nor the designer reads is refused, in one sentence."""
        used = [("agent", self.target)] + ([] if self.designer.kind in SEARCH_DESIGNERS else [("designer", self.designer)])
        unread = unread_setting(self, {"agent": AGENTS, "designer": DESIGNERS}, used, executor=self.executor,
                                whole="search")
        if unread is not None:
            raise ValueError(unread)
        return self


def load_redteam_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None,
                        sets: list[str] | None = None) -> RedTeamConfig:
    """A config file (TOML, YAML or JSON; optional), then command-line values, then ``--set key=value``."""
    data = read_settings(path, overrides, sets, "confirm_seeds=8")
    try:
        return RedTeamConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            raise UserError(f"red-team setting '{where}' {unknown_setting(tuple(err['loc']), RedTeamConfig)}.") from None
        if err["type"] == "missing":
            raise UserError(f"red-team setting '{where}' is required (e.g. --target openai:MODEL@URL).") from None
        message = str(err["msg"]).removeprefix("Value error, ").rstrip(".")
        subject = f"red-team setting '{where}': " if where else "red-team settings: "  # a check across settings
        raise UserError(f"{subject}{message}.") from None
