"""hf: agents show a tool-use level's tools through the model's chat template (``tools=``), as TRL does."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("torch")

from spadegym.agents.base import View  # noqa: E402
from spadegym.agents.hf import HFAgent  # noqa: E402
from spadegym.train import Policy, TrainConfig  # noqa: E402
from spadegym.train.tiny import CHATML, tiny_model  # noqa: E402

# A ChatML template that renders tools the way Qwen's does (a <tools> block in the system turn).
TOOL_TEMPLATE = (
    "{% if tools %}{{'<|im_start|>system\ntools:<tools>' + (tools | tojson) + '</tools><|im_end|>\n'}}"
    "{% endif %}" + CHATML
)
TOOLS = [{"name": "stock", "parameters": {"type": "object", "properties": {"site": {"type": "string"}}}}]


@pytest.fixture(scope="module")
def tiny():
    return tiny_model(seed=0)


def first_prompt(tiny, template: str) -> str:
    model, tokenizer = tiny
    tokenizer.chat_template = template
    agent = HFAgent(Policy(model, tokenizer, TrainConfig(max_new_tokens=2), seed=0))
    asyncio.run(agent.act([View("e", "How many at alpha?", tools=TOOLS)]))
    ((_ref, trace),) = agent._live.values()
    return tokenizer.decode(trace.prompt)


def test_a_template_that_renders_tools_gets_them_natively(tiny):
    text = first_prompt(tiny, TOOL_TEMPLATE)
    assert '<tools>[{"type": "function", "function": {"name": "stock"' in text
    assert "JSON schemas" not in text and "tool calls" in text  # not repeated in the system prompt


def test_a_template_that_ignores_tools_gets_their_schemas_in_the_system_prompt(tiny):
    text = first_prompt(tiny, CHATML)
    assert "<tools>" not in text
    assert "JSON schemas" in text and '"name": "stock"' in text
