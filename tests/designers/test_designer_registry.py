"""make_designer: specs, options, and "did you mean" on unknown names."""

from __future__ import annotations

import pytest

from spadegym.designers.llm import LLMDesigner
from spadegym.designers.registry import DESIGNER_MAX_TOKENS, UnknownDesigner, make_designer
from spadegym.designers.sampler import SamplerDesigner
from spadegym.errors import UserError


@pytest.mark.parametrize(("spec", "suggestion"), [
    ("mutaton", "did you mean 'mutation'?"),
    ("openia:qwen", "did you mean 'openai:MODEL[@BASE_URL]'?"),
    ("fixed:eas", "did you mean 'fixed:easy'?"),
    ("zzz", None),
])
def test_unknown_specs(spec: str, suggestion: str | None) -> None:
    with pytest.raises(UnknownDesigner) as err:
        make_designer(spec)
    message = str(err.value)
    assert isinstance(err.value, UserError) and f"unknown designer '{spec}'" in message
    assert (suggestion in message) if suggestion else "did you mean" not in message


def test_openai_spec_builds_the_llm_designer() -> None:
    designer = make_designer("openai:my/model@http://127.0.0.1:8001/v1", seed=5,
                             llm={"temperature": 0.2, "concurrency": 3},
                             llm_designer={"repair_turns": 1}, corpus=False, validation={"random_episodes": 4})
    assert isinstance(designer, LLMDesigner) and designer.name == "openai:my/model"
    ep = designer.endpoint
    assert (ep.model, ep.base_url, ep.temperature, ep.concurrency, ep.max_tokens) == (
        "my/model", "http://127.0.0.1:8001/v1", 0.2, 3, DESIGNER_MAX_TOKENS)
    assert designer.config.repair_turns == 1 and designer.corpus is None and designer.seed == 5
    assert designer._validation.random_episodes == 4


def test_openai_spec_without_model_is_a_user_error() -> None:
    with pytest.raises(UnknownDesigner, match="needs a model"):
        make_designer("openai:")


def test_default_corpus_is_the_shipped_one() -> None:
    designer = make_designer("openai:m")
    assert designer.corpus is not None and len(designer.corpus) >= 40


def test_sampler_specs() -> None:
    assert isinstance(make_designer("uniform", seed=1), SamplerDesigner)


@pytest.mark.parametrize(("spec", "options", "says"), [
    ("mutation", {"mutaton": {}}, "designer 'mutation' has no option 'mutaton'; did you mean 'mutation'?"),
    ("mutation", {"corpus": None}, "designer 'mutation' has no option 'corpus'; it takes exclude_families, mutation."),
    ("mutation", {"mutation": {"learning_rat": 0.1}}, "option 'mutation.learning_rat'"),
    ("openai:m", {"llm": {"temprature": 0.1}}, "designer option 'llm' has no option 'temprature'; did you mean"),
    ("fixed:easy", {"families": ["take_away"]}, "designer 'fixed:easy' has no option 'families'"),
    ("uniform", {"rounds": 8}, "designer 'uniform' has no option 'rounds'"),
])
def test_an_option_the_kind_does_not_take_is_one_sentence(spec: str, options: dict, says: str) -> None:
    with pytest.raises(UnknownDesigner) as err:
        make_designer(spec, **options)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_mutation_spec_takes_its_settings() -> None:
    from spadegym.designers.mutation import MutationDesigner

    designer = make_designer("mutation", seed=2, mutation={"learning_rate": 0.1})
    assert isinstance(designer, MutationDesigner) and designer.config.learning_rate == 0.1
