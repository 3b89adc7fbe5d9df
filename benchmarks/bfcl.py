"""A held-out tool-use benchmark: the Berkeley Function Calling Leaderboard (BFCL) against an ``openai:`` agent.

    .venv-bfcl/bin/python benchmarks/bfcl.py --agent openai:MODEL@http://127.0.0.1:8000/v1 --json
    .venv-bfcl/bin/python benchmarks/bfcl.py --agent openai:MODEL@URL --categories simple,multiple --limit 20

It runs in its own virtual environment, where ``bfcl-eval`` is installed (its own requirements pull in
every provider's client, so the project's environments do not carry it; benchmarks/README.md has the
three install lines). Everything that decides a score is BFCL's own: its data files, its
OpenAI-compatible handler (the request, the tools as the API's ``tools``, the ``tool_calls`` read back,
the multi-turn loop that executes the calls against BFCL's simulated back ends), and its checkers (the
AST checker for single-turn categories, the relevance rule, the multi-turn state and response checker).
This script only picks the entries, sends them to the agent's server and adds the verdicts up.

The agent spec is the project's ``openai:MODEL[@BASE_URL]`` (no URL: ``$OPENAI_BASE_URL`` or a local
server; the key from ``$OPENAI_API_KEY``, any for a local server). ``--mode prompt`` asks in BFCL's
prompting format instead (the functions in the system prompt, calls written as Python), for servers
without native tool calls.

Categories that run offline: the single-turn ones (``simple`` is ``simple_python``; ``multiple``,
``parallel``, ``parallel_multiple``, ``irrelevance``, ``simple_java``, ``simple_javascript``, the
``live_*`` ones) and the multi-turn ones (``multi_turn_base``, ``multi_turn_miss_func``,
``multi_turn_miss_param``, ``multi_turn_long_context``). Web search and memory need the network or
a vector store and are not offered. Each category's accuracy is BFCL's (entries passed / entries
run); ``score`` is their unweighted mean (BFCL's leaderboard weighs its groups; this is not that).
One JSON line with ``--json``: ``score_by_category``, ``score``, ``entries_by_category``,
``errors`` (entries whose request failed, counted as wrong) and ``seconds``. ``--agent`` may be given
more than once (a checkpoint before and after training): each agent is scored in turn on the same
entries, one JSON line each, and BFCL is loaded once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance", "multi_turn_base")
ALIASES = {"simple": "simple_python", "java": "simple_java", "javascript": "simple_javascript"}
#: BFCL's checker reads per model whether function names with a dot were sent with an underscore (the
#: API allows no dot in a tool's name, so its OpenAI handler sends ``math.factorial`` as
#: ``math_factorial``); these registry names are OpenAI models' entries of each mode in its table.
CHECKER_MODEL = {"fc": "gpt-4o-2024-11-20-FC", "prompt": "gpt-4o-2024-11-20"}


def _not_importable(error: ImportError) -> SystemExit:
    return SystemExit(f"bfcl-eval is not importable here ({error}); run this script with .venv-bfcl/bin/python "
                      "(benchmarks/README.md: how to make it).")


def offline_categories() -> list[str]:
    """BFCL's offline categories, from its category table alone: bad input is refused before its checkers load
    (their import pulls in every provider's client, seconds of CPU)."""
    os.environ.setdefault("BFCL_PROJECT_ROOT", tempfile.mkdtemp(prefix="bfcl-"))  # BFCL makes folders at import
    try:
        from bfcl_eval.constants import category_mapping
    except ImportError as error:
        raise _not_importable(error) from None
    return [*category_mapping.SINGLE_TURN_CATEGORY, *category_mapping.MULTI_TURN_CATEGORY]


def _bfcl() -> SimpleNamespace:
    """BFCL's parts, imported once its working files are pointed at a scratch folder (it makes folders at import)."""
    offline = offline_categories()
    try:
        from bfcl_eval import utils
        from bfcl_eval.constants import enums
        from bfcl_eval.eval_checker import eval_runner
        from bfcl_eval.model_handler.api_inference import openai_completion
    except ImportError as error:
        raise _not_importable(error) from None
    return SimpleNamespace(utils=utils, enums=enums, runner=eval_runner,
                           Handler=openai_completion.OpenAICompletionsHandler, offline=offline)


def parse_agent(spec_text: str) -> tuple[str, str]:
    """``openai:MODEL[@BASE_URL]`` -> (model, base URL), through the project's own spec parser."""
    sys.path.insert(0, str(ROOT))
    from spadegym.agents.registry import AGENTS
    from spadegym.llm.client import DEFAULT_BASE_URL, parse_spec

    spec = AGENTS.parse(spec_text)
    if spec.kind != "openai":
        raise SystemExit(f"bfcl scores an openai:MODEL[@BASE_URL] agent (a served model); got {spec_text!r}.")
    model, url = parse_spec(spec.argument)
    return model, url or os.environ.get("OPENAI_BASE_URL", DEFAULT_BASE_URL)


def categories(text: str, offline: list[str]) -> list[str]:
    names = [ALIASES.get(name.strip(), name.strip()) for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in offline]
    if unknown:
        raise SystemExit(f"not an offline BFCL category: {', '.join(unknown)}; choose from {', '.join(offline)} "
                         f"(aliases: {', '.join(ALIASES)}).")
    return names


def make_handler(bfcl: SimpleNamespace, model: str, base_url: str, mode: str, temperature: float,
                 timeout_s: float, max_tokens: int | None) -> Any:
    from openai import OpenAI

    os.environ.setdefault("OPENAI_API_KEY", "EMPTY")  # BFCL's handler builds a client at once; ours replaces it
    registry = CHECKER_MODEL[mode]
    handler = bfcl.Handler(model_name=model, temperature=temperature, registry_name=registry, is_fc_model=mode == "fc")
    client = OpenAI(base_url=base_url, api_key=os.environ["OPENAI_API_KEY"], timeout=timeout_s, max_retries=2)
    if max_tokens is not None:  # BFCL sends none: the server's default, which for a small model can be its whole context
        create = client.chat.completions.create

        def capped(**request: Any) -> Any:
            return create(**{"max_tokens": max_tokens, **request})

        client.chat.completions.create = capped
    handler.client = client
    return handler


def score_entry(bfcl: SimpleNamespace, handler: Any, category: str, result: Any, prompt: dict[str, Any],
                answer: dict[str, Any] | None, checker_model: str) -> dict[str, Any]:
    """One entry's verdict by BFCL's own per-entry evaluation (what its ``evaluate`` command runs per line):
    ``{"valid": True}``, or its error record."""
    runner, utils, enums = bfcl.runner, bfcl.utils, bfcl.enums
    if utils.is_relevance_or_irrelevance(category):
        verdict = runner._evaluate_single_relevance_entry(handler, prompt["id"], result, prompt, checker_model, category)
    elif utils.is_multi_turn(category):
        verdict = runner._evaluate_single_multi_turn_entry(handler, prompt["id"], result, answer["ground_truth"],
                                                           prompt, checker_model, category)
    else:
        language, fmt = enums.Language.PYTHON, enums.ReturnFormat.PYTHON
        if utils.is_java(category):
            language, fmt = enums.Language.JAVA, enums.ReturnFormat.JAVA
        elif utils.is_js(category):
            language, fmt = enums.Language.JAVASCRIPT, enums.ReturnFormat.JAVASCRIPT
        verdict = runner._evaluate_single_ast_entry(handler, prompt["id"], result, answer["ground_truth"], prompt,
                                                    checker_model, category, language=language, return_format=fmt,
                                                    has_tool_call_tag=False)
    return verdict


def run_category(bfcl: SimpleNamespace, handler: Any, category: str, limit: int | None, workers: int,
                 checker_model: str, failures: list[dict[str, Any]]) -> dict[str, Any]:
    # As BFCL does: entries with its language hints for inference, without them for scoring.
    utils = bfcl.utils
    asked = utils.load_dataset_entry(category)
    plain = {entry["id"]: entry for entry in utils.load_dataset_entry(category, include_prereq=False,
                                                                     include_language_specific_hint=False)}
    answers = ({} if utils.is_relevance_or_irrelevance(category)
               else {entry["id"]: entry for entry in utils.load_ground_truth_entry(category)})
    if limit is not None:
        asked = asked[:limit]

    def one(entry: dict[str, Any]) -> tuple[bool, str | None]:
        try:
            result, _ = handler.inference(entry, include_input_log=False, exclude_state_log=True)
        except Exception as error:  # a failed request is a wrong answer, named in the summary
            return False, f"{entry['id']}: {type(error).__name__}: {str(error)[:200]}"
        try:
            verdict = score_entry(bfcl, handler, category, result, json.loads(json.dumps(plain[entry["id"]])),
                                  answers.get(entry["id"]), checker_model)
        except Exception as error:  # the checker refusing a malformed reply: wrong, as BFCL counts it
            verdict = {"valid": False, "error": f"checker: {type(error).__name__}: {str(error)[:200]}"}
        if not verdict["valid"]:
            verdict.pop("prompt", None)  # the entry's own text: its id names it
            failures.append({"id": entry["id"], "category": category, **verdict})
        return bool(verdict["valid"]), None

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        outcomes = list(pool.map(one, asked))
    passed = sum(ok for ok, _ in outcomes)
    return {"accuracy": round(passed / len(outcomes), 4) if outcomes else 0.0, "entries": len(outcomes),
            "passed": passed, "errors": [why for _, why in outcomes if why]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", required=True, action="append",
                        help="openai:MODEL[@BASE_URL]; more than once: each scored in turn, BFCL loaded once")
    parser.add_argument("--categories", default=",".join(DEFAULT_CATEGORIES),
                        help=f"comma-separated BFCL categories (default: {','.join(DEFAULT_CATEGORIES)})")
    parser.add_argument("--limit", type=int, default=None, help="the first N entries of each category (default: all)")
    parser.add_argument("--mode", choices=("fc", "prompt"), default="fc",
                        help="fc: native tool calls (tools / tool_calls); prompt: BFCL's prompting format")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--workers", type=int, default=8, help="entries in flight at once")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for one request")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help="longest reply asked for (default: none sent, as BFCL does; the server decides)")
    parser.add_argument("--failures", type=Path, default=None,
                        help="write BFCL's verdict of every failed entry to this file, one JSON line each")
    parser.add_argument("--json", action="store_true", help="print one JSON line (one per agent)")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")

    agents = [(spec, *parse_agent(spec)) for spec in args.agent]  # every spec checked before BFCL loads
    chosen = categories(args.categories, offline_categories())
    bfcl = _bfcl()
    failures: list[dict[str, Any]] = []
    failed = False
    for spec, model, base_url in agents:
        if not args.json and len(agents) > 1:
            print(spec, flush=True)
        summary = score_agent(bfcl, args, spec, model, base_url, chosen, failures)
        failed |= summary.pop("every_request_failed")
        print(json.dumps(summary) if args.json else
              f"{'score (mean)':24s} {summary['score']:.4f}  ({sum(summary['entries_by_category'].values())} "
              f"entries, {summary['seconds']} s)", flush=True)
    if args.failures is not None:
        with args.failures.open("w", encoding="utf-8") as out:
            for failure in failures:
                out.write(json.dumps(failure, default=str) + "\n")
    return 1 if failed else 0


def score_agent(bfcl: SimpleNamespace, args: argparse.Namespace, spec: str, model: str, base_url: str,
                chosen: list[str], failures: list[dict[str, Any]]) -> dict[str, Any]:
    """One agent's summary on the chosen categories (its failed entries appended to ``failures``)."""
    handler = make_handler(bfcl, model, base_url, args.mode, args.temperature, args.timeout, args.max_tokens)
    checker_model = CHECKER_MODEL[args.mode]
    start = time.monotonic()
    results, own = {}, []
    for category in chosen:
        with contextlib.redirect_stdout(sys.stderr):  # BFCL's own progress lines: stdout keeps the figures
            results[category] = run_category(bfcl, handler, category, args.limit, args.workers, checker_model, own)
        if not args.json:
            r = results[category]
            print(f"{category:24s} {r['accuracy']:.4f}  ({r['passed']}/{r['entries']}"
                  f"{', ' + str(len(r['errors'])) + ' failed requests' if r['errors'] else ''})", flush=True)
    failures += [{"agent": spec, **failure} for failure in own]
    errors = [why for r in results.values() for why in r["errors"]]
    entries = sum(r["entries"] for r in results.values())
    if entries and len(errors) == entries:
        print(f"{spec}: every request failed; the first: {errors[0]}", file=sys.stderr)
    return {
        "agent": spec, "model": model, "mode": args.mode, "checker": "bfcl-eval " + _version(),
        "score_by_category": {name: r["accuracy"] for name, r in results.items()},
        "score": round(sum(r["accuracy"] for r in results.values()) / len(results), 4) if results else 0.0,
        "entries_by_category": {name: r["entries"] for name, r in results.items()},
        "errors": len(errors), "first_errors": errors[:3], "seconds": round(time.monotonic() - start, 1),
        "every_request_failed": bool(entries and len(errors) == entries),
    }


def _version() -> str:
    from importlib.metadata import version

    return version("bfcl-eval")


if __name__ == "__main__":
    raise SystemExit(main())
