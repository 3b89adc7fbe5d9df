"""A scripted designer model for the fake OpenAI-compatible server: replies routed by request kind."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from spadegym.designers import prompts
from spadegym.designers.corpus import Corpus
from spadegym.designers.llm import LLMDesigner, LLMDesignerConfig
from spadegym.llm.client import EndpointConfig
from spadegym_testing.fake_server import FakeReply

REPLIES = Path(__file__).parent.parent / "fixtures" / "designer_replies"
GOOD_HINT = "Work the arithmetic step by step and check the result before answering."


def reply(name: str) -> str:
    return (REPLIES / f"{name}.md").read_text(encoding="utf-8")


def request_kind(request: dict[str, Any]) -> str:
    messages = request["messages"]
    last = messages[-1]["content"]
    if messages[0]["content"] == prompts.HINT_SYSTEM:
        return "hint_retry" if last.startswith("That hint gives") else "hint"
    return "repair" if last.startswith("The validation gate rejected") else "design"


class DesignerModel:
    """Routes each request by its kind; each kind consumes its own script in arrival order."""

    def __init__(self, design: list[str | FakeReply], repair: list[str] = (), hints: list[str] = (GOOD_HINT,)):
        self.scripts = {"design": list(design), "repair": list(repair), "hint": list(hints)}
        self.requests: dict[str, list[dict[str, Any]]] = {"design": [], "repair": [], "hint": [],
                                                          "hint_retry": []}
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any], index: int) -> str | FakeReply:
        kind = request_kind(request)
        with self._lock:
            self.requests[kind].append(request)
            script = self.scripts["hint" if kind.startswith("hint") else kind]
            # The last entry repeats once the script runs out.
            return script.pop(0) if len(script) > 1 else script[0]


def designer_for(server: Any, sandbox: Any, **config: Any) -> LLMDesigner:
    """An LLM designer talking to ``server`` that validates in ``sandbox``."""
    endpoint = EndpointConfig(model="designer-model", base_url=server.url, retries=0, timeout_s=20,
                              max_tokens=4096)
    return LLMDesigner(endpoint, corpus=Corpus.default(), sandbox=sandbox, seed=3,
                       config=LLMDesignerConfig(**config))
