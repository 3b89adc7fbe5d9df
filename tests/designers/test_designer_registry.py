"""make_designer: specs, options, and "did you mean" on unknown names."""

from __future__ import annotations

import pytest

from spadegym.designers.llm import LLMDesigner
from spadegym.designers.registry import DESIGNER_MAX_TOKENS, UnknownDesigner, make_designer
from spadegym.designers.sampler import SamplerDesigner
from spadegym.errors import UserError


@pytest.mark.parametrize(("spec", "suggestion"), [
    ("mutaton", "Did you mean 'mutation'?"),
    ("openia:qwen", "Did you mean 'openai:MODEL'?"),
    ("fixed:eas", "Did you mean 'fixed:easy'?"),
    ("zzz", None),
])
def test_unknown_specs(spec: str, suggestion: str | None) -> None:
    with pytest.raises(UnknownDesigner) as err:
        make_designer(spec)
    message = str(err.value)
    assert isinstance(err.value, UserError) and f"unknown designer '{spec}'" in message
    assert (suggestion in message) if suggestion else "Did you mean" not in message


def test_openai_spec_builds_the_llm_designer() -> None:
    designer = make_designer("openai:my/model@http://127.0.0.1:8001/v1", seed=5,
                             llm={"temperature": 0.2, "concurrency": 3, "unknown_field": 1},
                             llm_designer={"repair_turns": 1}, corpus=False, validation={"random_episodes": 4})
    assert isinstance(designer, LLMDesigner) and designer.name == "openai:my/model"
    ep = designer.endpoint
    assert (ep.model, ep.base_url, ep.temperature, ep.concurrency, ep.max_tokens) == (
        "my/model", "http://127.0.0.1:8001/v1", 0.2, 3, DESIGNER_MAX_TOKENS)
    assert designer.config.repair_turns == 1 and designer.corpus is None and designer.seed == 5
    assert designer._validation.random_episodes == 4


def test_openai_spec_without_model_is_a_user_error() -> None:
    with pytest.raises(UnknownDesigner, match="names no model"):
        make_designer("openai:")


def test_default_corpus_is_the_shipped_one() -> None:
    designer = make_designer("openai:m")
    assert designer.corpus is not None and len(designer.corpus) >= 40


def test_sampler_specs() -> None:
    assert isinstance(make_designer("uniform", seed=1), SamplerDesigner)


def test_mutation_spec_ignores_options_it_does_not_take() -> None:
    from spadegym.designers.mutation import MutationDesigner

    designer = make_designer("mutation", seed=2, sandbox=None, corpus=None, llm={"temperature": 0.1},
                             validation={})
    assert isinstance(designer, MutationDesigner) and designer.name == "mutation"
