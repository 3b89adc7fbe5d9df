"""Designers by spec: ``mutation``, ``openai:MODEL[@BASE_URL]``, ``hf:PATH`` (a local model that trains), the
baseline samplers (``uniform``, ``fixed:easy``, ``fixed:all``, ``staged``), ``pool`` (a pool's files), or your own
``package.module:Class``.

    designer = make_designer("openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1", seed=0, validator=gate)

Each kind takes the options its model declares and no other (``DESIGNERS``): a
misspelt or foreign option is one sentence, never silently ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ..errors import UserError, install_hint
from ..plugins import import_object
from ..specs import IMPORT, Kind, NoOptions, Registry, Spec, form, from_sections, option_error
from ..validate.config import ValidationConfig
from .base import Designer
from .llm_config import LLMDesignerConfig
from .mutation import MutationConfig
from .pool import PoolConfig
from .sampler import FIXED_POOLS

#: The designer writes whole files: more room than a chat turn needs.
DESIGNER_MAX_TOKENS = 4096


class UnknownDesigner(UserError, ValueError):
    """The designer spec or an option names nothing it takes (the message is one sentence)."""


class DrawOptions(BaseModel):
    """What every designer that draws the built-in families takes."""

    model_config = {"extra": "forbid"}

    exclude_families: list[str] = Field(default_factory=list, description="Never these (a run's unseen families).")


class MutationOptions(DrawOptions):
    mutation: MutationConfig = Field(default_factory=MutationConfig, description="The mutation designer's settings.")


class SamplerOptions(DrawOptions):
    families: list[str] | None = Field(None, description="Only these built-in families (unset: all).")


class StagedOptions(SamplerOptions):
    rounds: int | None = Field(None, ge=1, description="The run's length, which its stages divide.")


class PoolOptions(BaseModel):
    model_config = {"extra": "forbid"}

    pool: PoolConfig = Field(default_factory=PoolConfig, description="The pool's files.")


class WriterOptions(BaseModel):
    """What a designer that writes files with a model takes."""

    model_config = {"extra": "forbid", "arbitrary_types_allowed": True}

    llm_designer: LLMDesignerConfig | None = Field(None, description="Prompting, repair and hint settings.")
    corpus: Any = Field(None, description="A JSONL corpus path; None: the shipped corpus; False: no grounding.")
    validation: ValidationConfig | None = Field(None, description="The gate's settings.")
    validator: Any = Field(None, description="Where its files are validated: (code, hint, name) -> verdict.")
    sandbox: Any = Field(None, description="The sandbox it validates in when no validator is given.")
    exclude_families: list[str] = Field(default_factory=list,
                                        description="Edit modes: never parents of these (a run's unseen families).")


class LLMOptions(WriterOptions):
    llm: dict[str, Any] = Field(default_factory=dict, description="Endpoint settings (EndpointConfig fields but model).")


class HFOptions(WriterOptions):
    train: Any = Field(None, description="How the local model samples and learns (TrainConfig or its fields).")
    policies: Any = Field(None, description="The run's shared policies (same path = shared weights).")


def _mutation(spec: Spec, seed: int, options: MutationOptions) -> Designer:
    from .mutation import MutationDesigner

    return MutationDesigner(seed=seed, config=options.mutation, exclude=options.exclude_families)


def _uniform(spec: Spec, seed: int, options: SamplerOptions) -> Designer:
    from .sampler import SamplerDesigner

    return SamplerDesigner(spec, seed=seed, families=options.families, exclude=options.exclude_families)


def _staged(spec: Spec, seed: int, options: StagedOptions) -> Designer:
    from .sampler import SamplerDesigner

    if not options.rounds:
        raise UnknownDesigner("the 'staged' designer spreads its levels over a run's rounds; "
                              "use it with spadegym run, or give make_designer rounds=N.")
    return SamplerDesigner(spec, seed=seed, rounds=options.rounds, families=options.families,
                           exclude=options.exclude_families)


def _fixed(spec: Spec, seed: int, options: DrawOptions) -> Designer:
    from .sampler import SamplerDesigner

    return SamplerDesigner(spec, seed=seed, exclude=options.exclude_families)


def _pool(spec: Spec, seed: int, options: PoolOptions) -> Designer:
    from .pool import PoolDesigner, pool_files

    if not options.pool.path:
        raise UnknownDesigner("the 'pool' designer plays the files of the pool: give the directory with "
                              "--pool DIR (or pool.path = \"DIR\").")
    return PoolDesigner(pool_files(options.pool.path))


def _corpus(option: Any) -> Any:
    from .corpus import Corpus

    if option is False:
        return None
    if isinstance(option, Corpus):
        return option
    return Corpus.load(Path(option)) if option else Corpus.default()


def _endpoint(model: str, url: str | None, llm: dict[str, Any]) -> Any:
    from ..llm.client import EndpointConfig

    values = {"max_tokens": DESIGNER_MAX_TOKENS, **llm, **({"base_url": url} if url else {})}
    try:
        return EndpointConfig(model=model, **values)
    except ValidationError as exc:
        raise UnknownDesigner(option_error("designer option 'llm'", exc, EndpointConfig)) from None


def _llm(spec: Spec, seed: int, options: LLMOptions) -> Designer:
    from ..llm.client import parse_spec
    from .llm import LLMDesigner

    try:
        model, url = parse_spec(spec.argument)
    except ValueError as exc:
        raise UnknownDesigner(str(exc)) from None
    return LLMDesigner(_endpoint(model, url, options.llm), corpus=_corpus(options.corpus), seed=seed,
                       config=options.llm_designer, sandbox=options.sandbox, validation=options.validation,
                       validator=options.validator, exclude_families=options.exclude_families)


def _hf(spec: Spec, seed: int, options: HFOptions) -> Designer:
    """The LLM designer written by a local model that learns from its designer rewards (GRPO, TRL)."""
    try:
        from ..train import PolicyPool, train_config
        from .hf import HFDesigner
    except ImportError as exc:
        raise UnknownDesigner(f"designer 'hf' needs the training extra ({exc}); install it with "
                              f"{install_hint('train')}.") from None
    config = train_config(options.train)
    pool = options.policies or PolicyPool(config, seed)
    designer_config = options.llm_designer
    if designer_config is None or designer_config == LLMDesignerConfig():  # unset: the training settings' repair turns
        designer_config = LLMDesignerConfig(repair_turns=config.designer_repair_turns)
    return HFDesigner(pool.get(spec.argument), config, config=designer_config, corpus=_corpus(options.corpus),
                      seed=seed, sandbox=options.sandbox, validation=options.validation, validator=options.validator,
                      exclude_families=options.exclude_families)


def _own(spec: Spec, seed: int, options: NoOptions) -> Designer:
    try:
        designer = import_object(spec.text, "designer")(seed=seed)  # your own: Class(seed=seed)
    except ValueError as exc:
        raise UnknownDesigner(str(exc)) from None
    if not isinstance(designer, Designer):
        raise UnknownDesigner(f"designer '{spec}' does not implement the Designer protocol (name, async propose, "
                              "state_dict, load_state_dict); see spadegym.designers.base.")
    return designer


def _families(config: Any) -> dict[str, Any]:
    """A search's families (a run has none: its samplers draw every family)."""
    families = getattr(config, "families", None)
    return {"families": families} if families else {}


def _excluded(config: Any) -> dict[str, Any]:
    """The families a run keeps from every designer: its unseen ones and the other setting's (a search: none)."""
    exclusions = getattr(config, "designer_exclusions", None)
    return {"exclude_families": exclusions()} if exclusions is not None else {}


def _writer_sections(config: Any) -> dict[str, Any]:
    return {"corpus": config.corpus, **from_sections(llm_designer="llm_designer", validation="validation")(config)}


DESIGNERS: Registry[Designer] = Registry("designer", [
    Kind("mutation", form("designer", "mutation"), _mutation, MutationOptions, sections=("mutation",),
         from_config=lambda config: {"mutation": config.mutation.model_copy(update=_families(config)) if
                                     _families(config) else config.mutation, **_excluded(config)}),
    Kind("openai", form("designer", "openai"), _llm, LLMOptions, argument="required", needs="a model",
         sections=("llm", "llm_designer", "corpus"),
         from_config=lambda config: {**_writer_sections(config), **_excluded(config), "llm": config.llm.model_dump()}),
    Kind("hf", form("designer", "hf"), _hf, HFOptions, argument="required", needs="a model (a model directory or a .gguf file)",
         sections=("train", "llm_designer", "corpus"),
         from_config=lambda config: {**_writer_sections(config), **_excluded(config),
                                     **from_sections(train="train")(config)}),
    Kind("uniform", form("designer", "uniform"), _uniform, SamplerOptions,
         from_config=lambda config: {**_families(config), **_excluded(config)}),
    Kind("fixed", form("designer", "fixed"), _fixed, DrawOptions, argument="required", arguments=FIXED_POOLS,
         from_config=_excluded),
    Kind("staged", form("designer", "staged"), _staged, StagedOptions,
         from_config=lambda config: {**_families(config), **_excluded(config), "rounds": getattr(config, "rounds", None)}),
    Kind("pool", form("designer", "pool"), _pool, PoolOptions, from_config=from_sections(pool="pool")),
], error=UnknownDesigner, imports=Kind(IMPORT, form("designer", IMPORT), _own))

DESIGNER_SPECS = tuple(DESIGNERS.forms())


def make_designer(spec: str | Spec, *, seed: int = 0, **options: Any) -> Designer:
    """Build the designer ``spec`` names with ``options`` (each checked against what its kind takes).

    The LLM designer takes ``llm`` (EndpointConfig fields), ``llm_designer``,
    ``corpus`` (a JSONL path; None: the shipped corpus; False: no grounding),
    ``validation`` and ``validator`` (or ``sandbox``); ``hf:`` also ``train`` and
    ``policies``. The mutation designer takes ``mutation``; ``uniform`` and
    ``staged`` take ``families``, and ``staged`` the run's ``rounds``; the mutation
    designer, the samplers and the model designers take ``exclude_families`` (a run's unseen families).
    """
    return DESIGNERS.make(spec, seed, **options)
