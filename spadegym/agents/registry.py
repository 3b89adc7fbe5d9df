"""Agent specs -> agents: ``random``, ``human``, ``scripted:FILE``, ``learner[:DIR]`` (a checkpoint, or a run
directory: its last checkpoint), ``openai:MODEL[@URL]``, ``hf:PATH`` (a local Hugging Face model or GGUF file that trains with TRL), or your own ``package.module:Class``.

    agent = make_agent("openai:qwen3-8b@http://127.0.0.1:8000/v1", temperature=0.6, concurrency=64)
    agent = make_agent("scripted:tests/solutions/maze.txt")

Each kind takes the options its model declares and no other (``AGENTS``): a bad
spec or option is one sentence (``AgentSpecError``) with the nearest known name.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, Field, ValidationError, create_model

from ..errors import install_hint
from ..plugins import import_object
from ..specs import IMPORT, AgentSpecError, Kind, NoOptions, Registry, Spec, form, from_sections, option_error
from .base import Agent
from .openai_config import OpenAIAgentConfig


class HumanOptions(BaseModel):
    model_config = {"extra": "forbid", "arbitrary_types_allowed": True}

    input_stream: Any = Field(None, description="Where replies are read from (default: stdin).")
    console: Any = Field(None, description="Where observations are shown (default: the terminal).")


@functools.cache
def learner_options() -> type[BaseModel]:
    """The learner's options (its model loads on first use)."""
    from .learner.agent import LearnerConfig

    return create_model("LearnerOptions", __config__={"extra": "forbid"},
                        config=(LearnerConfig | None, Field(None, description="The learner's model and optimiser.")))


@functools.cache
def openai_options() -> type[BaseModel]:
    """The LLM agent's options: its endpoint's settings (the spec names the model, and its URL wins) and how it
    plays (the client loads on first use)."""
    from ..llm.client import EndpointConfig

    return create_model("OpenAIOptions", __base__=OpenAIAgentConfig, **{
        name: (field.annotation, field) for name, field in EndpointConfig.model_fields.items() if name != "model"})


class HFOptions(BaseModel):
    model_config = {"extra": "forbid", "arbitrary_types_allowed": True}

    train: Any = Field(None, description="How the model samples and learns (TrainConfig or its fields).")
    policies: Any = Field(None, description="The run's shared policies (same path = shared weights).")


class AnyOptions(BaseModel):
    """Your own agent's options: whatever its class takes."""

    model_config = {"extra": "allow"}


def _random(spec: Spec, seed: int, options: NoOptions) -> Agent:
    from .random_agent import RandomAgent

    return RandomAgent(seed=seed)


def _human(spec: Spec, seed: int, options: HumanOptions) -> Agent:
    from .human import HumanAgent

    return HumanAgent(input_stream=options.input_stream, console=options.console)


def _scripted(spec: Spec, seed: int, options: NoOptions) -> Agent:
    from .scripted import ScriptedAgent, ScriptError

    try:
        return ScriptedAgent.from_file(spec.argument)
    except ScriptError as exc:
        raise AgentSpecError(str(exc)) from None


def _learner(spec: Spec, seed: int, options: Any) -> Agent:
    try:
        from .learner import make_learner
    except ImportError as exc:
        raise AgentSpecError(f"the built-in learner is not available in this installation ({exc}).") from None
    path = spec.argument or None  # a run directory was resolved by the caller (store.learner_run)
    try:
        return make_learner(path, seed, options.config)
    except (OSError, ValueError) as exc:  # CheckpointError is a ValueError
        message = str(exc).rstrip(".")
        raise AgentSpecError(f"cannot load the learner from '{spec.argument}': {message}.") from None


def _openai(spec: Spec, seed: int, options: BaseModel) -> Agent:
    from ..llm import EndpointConfig, parse_spec
    from .openai_agent import OpenAIAgent

    try:
        model, url = parse_spec(spec.argument)
    except ValueError as exc:
        raise AgentSpecError(str(exc)) from None
    values = options.model_dump(exclude_unset=True)
    playing = {k: v for k, v in values.items() if k in OpenAIAgentConfig.model_fields}
    endpoint = {k: v for k, v in values.items() if k not in playing}
    if url:  # the spec's @URL wins over a configured one
        endpoint["base_url"] = url
    elif endpoint.get("base_url") is None:
        endpoint.pop("base_url", None)
    try:
        return OpenAIAgent(EndpointConfig(model=model, **endpoint), OpenAIAgentConfig(**playing))
    except ValidationError as exc:
        raise AgentSpecError(option_error("agent 'openai'", exc, openai_options())) from None


def _hf(spec: Spec, seed: int, options: HFOptions) -> Agent:
    try:
        from ..train import PolicyPool, train_config
        from .hf import HFAgent
    except ImportError as exc:
        raise AgentSpecError(f"agent 'hf' needs the training extra ({exc}); install it with "
                             f"{install_hint('train')}.") from None
    try:
        config = train_config(options.train)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise AgentSpecError(f"train setting '{'.'.join(str(p) for p in first['loc'])}' is invalid: {first['msg']}.") from None
    pool = options.policies or PolicyPool(config, seed)
    return HFAgent(pool.get(spec.argument), config)


def _own(spec: Spec, seed: int, options: AnyOptions) -> Agent:
    try:
        cls = import_object(spec.text, "agent")
    except ValueError as exc:
        raise AgentSpecError(str(exc)) from None
    given = options.model_extra or {}
    try:
        agent = cls(seed=seed, **given)
    except TypeError as exc:  # your class's signature names what it takes
        message = " ".join(str(exc).split()).rstrip(".")
        raise AgentSpecError(f"agent '{spec}' cannot be built with {', '.join(sorted(given)) or 'seed alone'}: "
                             f"{message}.") from None
    if not isinstance(agent, Agent):
        raise AgentSpecError(f"agent '{spec}' does not implement the Agent protocol (name, keeps_history, "
                             "needs_valid_actions, lockstep, act, end_episodes, aclose); see spadegym.rollout.agent.")
    return agent


def _played(config: Any) -> dict[str, Any]:
    """How the LLM agent plays, where the config says (a search's target plays as configured by default)."""
    played = getattr(config, "openai_agent", None)
    return played.model_dump() if played is not None else {}


AGENTS: Registry[Agent] = Registry("agent", [
    Kind("random", form("agent", "random"), _random),
    Kind("human", form("agent", "human"), _human, HumanOptions),
    Kind("scripted", form("agent", "scripted"), _scripted, argument="required", needs="a file (one action per line)"),
    Kind("learner", form("agent", "learner"), _learner, learner_options, argument="optional", sections=("learner",),
         from_config=from_sections(config="learner")),
    Kind("openai", form("agent", "openai"), _openai, openai_options, argument="required", needs="a model",
         sections=("llm", "openai_agent"),
         from_config=lambda config: {**config.llm.model_dump(), **_played(config)}),
    Kind("hf", form("agent", "hf"), _hf, HFOptions, argument="required", needs="a model (a model directory or a .gguf file)",
         sections=("train",), from_config=from_sections(train="train")),
], error=AgentSpecError, imports=Kind(IMPORT, form("agent", IMPORT), _own, AnyOptions))

#: Spec forms, as the error messages and `--help` show them.
SPEC_FORMS = {kind.name: kind.form for kind in AGENTS.kinds.values()}


def agent_kinds() -> list[str]:
    """The spec forms ``make_agent`` understands."""
    return AGENTS.forms()


def make_agent(spec: str | Spec, *, seed: int = 0, **options: Any) -> Agent:
    """Build the agent a spec names; ``options`` are the kind's settings (e.g. temperature for openai).

    ``package.module:Class`` names your own: it is built as ``Class(seed=seed, **options)``
    and must implement ``Agent`` (and ``LearningAgent`` to be trained).
    """
    return AGENTS.make(spec, seed, **options)
