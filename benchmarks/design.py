"""Designers through `design`: how many proposals come out valid, and how fast.

1. The LLM designer on the scripted test replies (tests/fixtures/designer_replies)
   behind a real local OpenAI-compatible server: share valid at the first
   attempt and after repair turns, and where the rest went.
2. A designer through `design` (default: the mutation designer, 20 proposals):
   proposals validated per second, valid share.

    python benchmarks/design.py
    python benchmarks/design.py --designer uniform --count 40 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPLIES = ROOT / "tests" / "fixtures" / "designer_replies"
#: One batch of scripted first replies; every repair request gets the repaired file.
BATCH = ["prose_valid", "invalid_first", "fstring_bug", "no_code", "think_valid", "invalid_first",
         "declined", "prose_valid"]
HINT = "Work the arithmetic step by step and check the result before answering."


def llm_share(sandbox) -> dict:
    from spadegym.designers import prompts
    from spadegym.designers.base import DesignContext
    from spadegym.designers.corpus import Corpus
    from spadegym.designers.llm import LLMDesigner
    from spadegym.llm.client import EndpointConfig
    from spadegym_testing.fake_server import FakeOpenAIServer

    design = [(REPLIES / f"{n}.md").read_text() for n in BATCH]
    repaired = (REPLIES / "repaired.md").read_text()

    def script(request: dict, index: int) -> str:
        messages = request["messages"]
        if messages[0]["content"] == prompts.HINT_SYSTEM:
            return HINT
        if messages[-1]["content"].startswith("The validation gate rejected"):
            return repaired
        return design.pop(0)

    with FakeOpenAIServer(script) as server:
        designer = LLMDesigner(EndpointConfig(model="scripted", base_url=server.url, retries=0),
                               corpus=Corpus.default(), sandbox=sandbox)
        start = time.perf_counter()
        cands = asyncio.run(designer.propose(DesignContext(skill="Mathematical Reasoning", count=len(BATCH))))
        seconds = time.perf_counter() - start
    n = len(cands)
    return {"proposals": n, "valid_first_attempt": sum(bool(c.notes.first_attempt_valid) for c in cands) / n,
            "valid_after_repair": sum(c.refusal is None for c in cands) / n,
            "refused": designer.stats.refused, "fixes": designer.stats.fixes,
            "repair_turns": designer.stats.repair_turns, "seconds": round(seconds, 2)}


def pool_rate(spec: str, count: int, sandbox) -> dict:
    from spadegym.designers.design import design
    from spadegym.designers.registry import make_designer

    with tempfile.TemporaryDirectory() as out:
        summary = design(make_designer(spec, seed=0), count, None, out, sandbox)  # pool_rate: mutation and samplers
    return {"designer": spec, "proposals": summary.proposals, "valid": summary.valid,
            "refused": summary.refused, "seconds": round(summary.seconds, 2),
            "proposals_per_second": round(summary.proposals_per_second, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designer", default="mutation")
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from spadegym.sandbox import Sandbox

    with Sandbox() as sandbox:
        result = {"llm_on_test_replies": llm_share(sandbox), "pool": pool_rate(args.designer, args.count, sandbox)}
    if args.json:
        print(json.dumps(result))
        return
    llm, pool = result["llm_on_test_replies"], result["pool"]
    print(f"LLM designer, {llm['proposals']} scripted replies: valid at first attempt "
          f"{llm['valid_first_attempt']:.0%}, after repair {llm['valid_after_repair']:.0%}; "
          f"refused {llm['refused']}; fixes {llm['fixes']}; {llm['seconds']} s")
    print(f"design with {pool['designer']}: {pool['proposals']} proposals, {pool['valid']} valid, "
          f"refused {pool['refused']}, {pool['seconds']} s = {pool['proposals_per_second']} proposals/s")


if __name__ == "__main__":
    main()
