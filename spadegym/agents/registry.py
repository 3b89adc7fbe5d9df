"""Agent specs -> agents: ``random``, ``human``, ``scripted:FILE``, ``learner[:DIR]``, ``openai:MODEL[@URL]``,
``hf:PATH`` (a local Hugging Face model or GGUF file that trains with TRL).

    agent = make_agent("openai:qwen3-8b@http://127.0.0.1:8000/v1", temperature=0.6, concurrency=64)
    agent = make_agent("scripted:tests/solutions/maze.txt")

Options are checked against what the kind accepts; a bad spec or option is one
sentence (``AgentSpecError``) with the nearest known name.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ..errors import UserError
from ..plugins import import_object, is_import_path
from .base import Agent

#: Spec forms, as the error messages and `--help` show them.
SPEC_FORMS = {
    "random": "random",
    "human": "human",
    "scripted": "scripted:FILE",
    "learner": "learner[:DIR]",
    "openai": "openai:MODEL[@BASE_URL]",
    "own": "package.module:Class",
    "hf": "hf:PATH",
}


class AgentSpecError(UserError, ValueError):
    """An agent spec or option that cannot be used (the message is one sentence)."""


def _no_argument(kind: str, argument: str) -> None:
    if argument:
        raise AgentSpecError(f"agent '{kind}' takes no argument (got '{kind}:{argument}'); write just '{kind}'.")


def _no_options(kind: str, options: dict[str, Any]) -> None:
    if options:
        names = ", ".join(sorted(options))
        raise AgentSpecError(f"agent '{kind}' takes no options (got {names}).")


def _random(argument: str, seed: int, options: dict[str, Any]) -> Agent:
    from .random_agent import RandomAgent

    _no_argument("random", argument)
    _no_options("random", options)
    return RandomAgent(seed=seed)


def _human(argument: str, seed: int, options: dict[str, Any]) -> Agent:
    from .human import HumanAgent

    _no_argument("human", argument)
    return HumanAgent(**options)


def _scripted(argument: str, seed: int, options: dict[str, Any]) -> Agent:
    from .scripted import ScriptedAgent, ScriptError

    if not argument:
        raise AgentSpecError("agent 'scripted' needs a file: write scripted:FILE (one action per line).")
    _no_options("scripted", options)
    try:
        return ScriptedAgent.from_file(argument)
    except ScriptError as exc:
        raise AgentSpecError(str(exc)) from None


def _learner(argument: str, seed: int, options: dict[str, Any]) -> Agent:
    config = options.pop("config", None)  # a LearnerConfig or a dict of its fields (a run's ``learner`` section)
    _no_options("learner", options)
    try:
        from .learner import make_learner
    except ImportError as exc:
        raise AgentSpecError(f"the built-in learner is not available in this installation ({exc}).") from None
    try:
        return make_learner(argument or None, seed, config)
    except (OSError, ValueError) as exc:  # CheckpointError is a ValueError
        message = str(exc).rstrip(".")
        raise AgentSpecError(f"cannot load the learner from '{argument}': {message}.") from None


def _openai(argument: str, seed: int, options: dict[str, Any]) -> Agent:
    from ..llm import EndpointConfig, parse_spec
    from .openai_agent import OpenAIAgent, OpenAIAgentConfig

    try:
        model, url = parse_spec(f"openai:{argument}")
    except ValueError as exc:
        raise AgentSpecError(str(exc)) from None
    endpoint_fields = set(EndpointConfig.model_fields)
    agent_fields = set(OpenAIAgentConfig.model_fields)
    unknown = sorted(set(options) - endpoint_fields - agent_fields - {"model", "base_url"})
    if unknown:
        known = sorted((endpoint_fields | agent_fields) - {"model", "base_url"})
        near = difflib.get_close_matches(unknown[0], known, n=1)
        tip = f"; did you mean '{near[0]}'?" if near else f"; known options: {', '.join(known)}."
        raise AgentSpecError(f"unknown option '{unknown[0]}' for agent 'openai'{tip}")
    endpoint_args = {k: v for k, v in options.items() if k in endpoint_fields and k not in ("model", "base_url")}
    agent_args = {k: v for k, v in options.items() if k in agent_fields}
    url = url or options.get("base_url")  # the spec's @URL wins over a configured one
    try:
        endpoint = EndpointConfig(model=model, **({"base_url": url} if url else {}), **endpoint_args)
        config = OpenAIAgentConfig(**agent_args)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise AgentSpecError(f"agent option '{field}' is invalid: {first['msg']}.") from None
    return OpenAIAgent(endpoint, config)


def _own(spec: str, seed: int, options: dict[str, Any]) -> Agent:
    try:
        cls = import_object(spec, "agent")
    except ValueError as exc:
        raise AgentSpecError(str(exc)) from None
    agent = cls(seed=seed, **options)
    if not isinstance(agent, Agent):
        raise AgentSpecError(f"agent '{spec}' does not implement the Agent protocol (name, keeps_history, "
                             "needs_valid_actions, lockstep, act, end_episodes, aclose); see spadegym.rollout.agent.")
    return agent


def _hf(argument: str, seed: int, options: dict[str, Any]) -> Agent:
    if not argument:
        raise AgentSpecError("agent 'hf' needs a model: write hf:PATH (a Hugging Face model directory or a .gguf file).")
    unknown = sorted(set(options) - {"train", "policies"})
    if unknown:
        raise AgentSpecError(f"unknown option '{unknown[0]}' for agent 'hf'; it takes train (the [train] settings).")
    try:
        from ..train import PolicyPool, train_config
        from .hf import HFAgent
    except ImportError as exc:
        raise AgentSpecError(f"agent 'hf' needs the training extra ({exc}); install it with "
                             "pip install 'spadegym[train]'.") from None
    try:
        config = train_config(options.get("train"))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise AgentSpecError(f"train setting '{'.'.join(str(p) for p in first['loc'])}' is invalid: {first['msg']}.") from None
    pool = options.get("policies") or PolicyPool(config, seed)
    return HFAgent(pool.get(argument), config)


_FACTORIES: dict[str, Callable[[str, int, dict[str, Any]], Agent]] = {
    "random": _random, "human": _human, "scripted": _scripted, "learner": _learner, "openai": _openai,
    "hf": _hf,
}


def agent_kinds() -> list[str]:
    """The spec forms ``make_agent`` understands."""
    return list(SPEC_FORMS.values())


def make_agent(spec: str, *, seed: int = 0, **options: Any) -> Agent:
    """Build the agent a spec names; ``options`` are the kind's settings (e.g. temperature for openai).

    ``package.module:Class`` names your own: it is built as ``Class(seed=seed, **options)``
    and must implement ``Agent`` (and ``LearningAgent`` to be trained).
    """
    if is_import_path(spec.strip()):
        return _own(spec.strip(), seed, options)
    kind, _, argument = spec.strip().partition(":")
    factory = _FACTORIES.get(kind)
    if factory is None:
        near = difflib.get_close_matches(kind, list(_FACTORIES), n=1, cutoff=0.5)
        tip = f"did you mean '{SPEC_FORMS[near[0]]}'? " if near else ""
        raise AgentSpecError(f"unknown agent '{spec}'; {tip}known agents: {', '.join(agent_kinds())}.")
    return factory(argument.strip(), seed, dict(options))
