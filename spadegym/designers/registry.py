"""Designers by name: ``mutation``, ``openai:MODEL[@BASE_URL]``, ``hf:PATH`` (a local model that trains), or a baseline sampler
(``uniform``, ``fixed:easy``, ``fixed:all``, ``staged``).

    designer = make_designer("openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1", seed=0, sandbox=box)
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..plugins import import_object, is_import_path
from .base import Designer

DESIGNER_SPECS = ("mutation", "openai:MODEL[@BASE_URL]", "hf:PATH", "uniform", "fixed:easy", "fixed:all", "staged",
                  "package.module:Class")
#: The designer writes whole files: more room than a chat turn needs.
DESIGNER_MAX_TOKENS = 4096


class UnknownDesigner(UserError, ValueError):
    """The designer spec names nothing we know."""


def make_designer(spec: str, *, seed: int = 0, **options: Any) -> Designer:
    """Build a designer from its spec.

    Each kind reads the options it needs and ignores the rest, so a caller can
    pass every section of a run's config. The LLM designer reads ``sandbox``,
    ``validation`` (a ValidationConfig or a dict of its fields), ``corpus`` (a
    JSONL path; None = the shipped corpus, False = no grounding), ``llm`` (a dict
    of EndpointConfig fields, e.g. temperature, max_tokens, concurrency),
    ``llm_designer`` (an LLMDesignerConfig or a dict) and ``validator``. The
    mutation designer reads ``mutation`` (a MutationConfig or a dict). The
    ``staged`` sampler reads ``rounds`` (the run's length, which its stages divide);
    ``uniform`` and ``staged`` read ``families`` (only these); the mutation designer and the samplers
    read ``exclude_families`` (never these: the run's unseen families).
    """
    spec = spec.strip()
    if is_import_path(spec):  # your own: built as Class(seed=seed), must implement Designer
        try:
            designer = import_object(spec, "designer")(seed=seed)
        except ValueError as exc:
            raise UnknownDesigner(str(exc)) from None
        if not isinstance(designer, Designer):
            raise UnknownDesigner(f"designer '{spec}' does not implement the Designer protocol (name, async propose, "
                                  "state_dict, load_state_dict); see spadegym.designers.base.")
        return designer
    if spec == "mutation":
        return _mutation(seed, options)
    if spec.startswith("openai:"):
        return _llm(spec, seed, options)
    if spec.startswith("hf:"):
        return _hf(spec.removeprefix("hf:").strip(), seed, options)
    from .sampler import SAMPLER_SPECS, SamplerDesigner

    if spec == "staged" and not options.get("rounds"):
        raise UnknownDesigner("the 'staged' designer spreads its levels over a run's rounds; "
                              "use it with spadegym run, or give make_designer rounds=N.")
    if spec in SAMPLER_SPECS:  # non-adaptive baselines
        return SamplerDesigner(spec, seed=seed, rounds=options.get("rounds"), families=options.get("families"),
                               exclude=options.get("exclude_families") or ())
    names = ["mutation", *SAMPLER_SPECS]
    near = difflib.get_close_matches(spec, names, n=1, cutoff=0.6) or \
        difflib.get_close_matches(spec.split(":")[0], ["openai"], n=1, cutoff=0.6)
    hint = f" Did you mean '{near[0]}{':MODEL' if near[0] == 'openai' else ''}'?" if near else ""
    raise UnknownDesigner(f"unknown designer '{spec}'; use one of {', '.join(DESIGNER_SPECS)}.{hint}")


def _mutation(seed: int, options: dict[str, Any]) -> Designer:
    from .mutation import MutationDesigner

    return MutationDesigner(seed=seed, config=options.get("mutation"), exclude=options.get("exclude_families") or ())


def _hf(path: str, seed: int, options: dict[str, Any]) -> Designer:
    """The LLM designer written by a local model that learns from its designer rewards (GRPO, TRL)."""
    if not path:
        raise UnknownDesigner("designer 'hf' needs a model: write hf:PATH (a model directory or a .gguf file).")
    try:
        from ..train import PolicyPool, train_config
        from .hf import HFDesigner
    except ImportError as exc:
        raise UnknownDesigner(f"designer 'hf' needs the training extra ({exc}); install it with "
                              "pip install 'spadegym[train]'.") from None
    config = train_config(options.get("train"))
    pool = options.get("policies") or PolicyPool(config, seed)
    corpus, designer_config, validation = _llm_parts(options)
    from .llm import LLMDesignerConfig

    if designer_config is None or designer_config == LLMDesignerConfig():  # unset: the training settings' repair turns
        designer_config = LLMDesignerConfig(repair_turns=config.designer_repair_turns)
    return HFDesigner(pool.get(path), config, config=designer_config, corpus=corpus, seed=seed, sandbox=options.get("sandbox"),
                      validation=validation, validator=options.get("validator"))


def _llm_parts(options: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The corpus, LLMDesignerConfig and ValidationConfig that the options name."""
    from .corpus import Corpus
    from .llm import LLMDesignerConfig

    corpus_opt = options.get("corpus")
    if corpus_opt is False:
        corpus = None
    elif isinstance(corpus_opt, Corpus):
        corpus = corpus_opt
    elif corpus_opt:
        corpus = Corpus.load(Path(corpus_opt))
    else:
        corpus = Corpus.default()
    config = options.get("llm_designer")
    if config is not None:
        config = LLMDesignerConfig.model_validate(config)
    validation = options.get("validation")
    if isinstance(validation, dict):
        from ..validate import ValidationConfig

        validation = ValidationConfig(**validation)
    return corpus, config, validation


def _llm(spec: str, seed: int, options: dict[str, Any]) -> Designer:
    from ..llm.client import EndpointConfig, parse_spec
    from .llm import LLMDesigner

    try:
        model, url = parse_spec(spec)
    except ValueError as exc:
        raise UnknownDesigner(str(exc)) from None
    llm = dict(options.get("llm") or {})
    llm.setdefault("max_tokens", DESIGNER_MAX_TOKENS)
    if url:
        llm["base_url"] = url
    known = set(EndpointConfig.model_fields)
    endpoint = EndpointConfig(model=model, **{k: v for k, v in llm.items() if k in known})

    corpus, config, validation = _llm_parts(options)
    return LLMDesigner(endpoint, corpus=corpus, seed=seed, config=config, sandbox=options.get("sandbox"),
                       validation=validation, validator=options.get("validator"))
