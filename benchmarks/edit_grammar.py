"""Constrained decoding of an edit on a local model: spadegym's own grammar against the libraries that do it.

For the edit forms of a few parent levels (each parent has its own form: its allowed values), on a real
tokenizer (SmolLM2's by default), each option builds its constraint from the form's JSON schema (ours from
the form itself), then random walks through the allowed tokens write replies. Figures, in CPU seconds of
this process (the load on a shared machine moves wall time, not these): the tokenizer's one-off setup, the
per-form setup (every parent needs one), the time to work out one step's allowed tokens, and the share of
walks whose reply parses as an edit of the form. A library that is not installed, or does not load or
accept the schema, is reported with the reason.

    python benchmarks/edit_grammar.py [--walks 20] [--model DIR] [--json]

The libraries are not dependencies of spadegym; to measure them, install them beside it
(``pip install --target DIR llguidance xgrammar outlines-core lm-format-enforcer``, then put DIR on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from typing import Any

from spadegym.designers.edit_form import EditForm, LevelEdit
from spadegym.designers.edit_grammar import EditDecoder, Vocabulary
from spadegym.families.edits import edit_space
from spadegym.train.models import prepare_model

PARENTS = [("grid_maze", 1), ("code_breaker", 2), ("suspect_grid", 0), ("hidden_order", 3), ("knapsack", 1),
           ("number_sequence", 2)]


def ours(tokenizer: Any) -> tuple[Callable, Callable]:
    vocab = Vocabulary.of(tokenizer)

    def form_setup(form: EditForm) -> Any:
        return EditDecoder(form, vocab)

    def row(decoder: EditDecoder) -> tuple[Callable[[], list[int]], Callable[[int], None], Callable[[], bool]]:
        r = decoder.row()
        return r.allowed, r.advance, lambda: r.finished
    return form_setup, row


def llguidance_option(tokenizer: Any) -> tuple[Callable, Callable]:
    import llguidance
    import llguidance.hf
    import llguidance.torch

    lltok = llguidance.hf.from_tokenizer(tokenizer)
    eos = tokenizer.eos_token_id

    def form_setup(form: EditForm) -> Any:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(form.schema(), defaults={"whitespace_flexible": False})
        matcher = llguidance.LLMatcher(lltok, grammar)
        if matcher.is_error():  # a schema it does not take is refused here, not at the first token
            raise ValueError(matcher.get_error())
        return grammar

    def row(grammar: Any) -> tuple[Callable[[], list[int]], Callable[[int], None], Callable[[], bool]]:
        matcher = llguidance.LLMatcher(lltok, grammar)
        mask = llguidance.torch.allocate_token_bitmask(1, lltok.vocab_size)
        state = {"done": False}

        def allowed() -> list[int]:
            llguidance.torch.fill_next_token_bitmask(matcher, mask, 0)
            return _bits(mask[0])

        def advance(token: int) -> None:
            if token == eos or matcher.is_stopped():
                state["done"] = True
            else:
                matcher.consume_token(token)
        return allowed, advance, lambda: state["done"] or matcher.is_error()
    return form_setup, row


def xgrammar_option(tokenizer: Any) -> tuple[Callable, Callable]:
    import xgrammar as xgr

    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
    compiler = xgr.GrammarCompiler(info)
    eos = tokenizer.eos_token_id

    def form_setup(form: EditForm) -> Any:
        return compiler.compile_json_schema(json.dumps(form.schema()), any_whitespace=False)

    def row(compiled: Any) -> tuple[Callable[[], list[int]], Callable[[int], None], Callable[[], bool]]:
        matcher = xgr.GrammarMatcher(compiled)
        mask = xgr.allocate_token_bitmask(1, info.vocab_size)
        state = {"done": False}

        def allowed() -> list[int]:
            matcher.fill_next_token_bitmask(mask)
            return _bits(mask[0])

        def advance(token: int) -> None:
            if token == eos or matcher.is_terminated() or not matcher.accept_token(token):
                state["done"] = True
        return allowed, advance, lambda: state["done"]
    return form_setup, row


def outlines_option(tokenizer: Any) -> tuple[Callable, Callable]:
    from outlines_core import Guide, Index
    from outlines_core import Vocabulary as OVocabulary
    from outlines_core.json_schema import build_regex_from_schema

    vocab = Vocabulary.of(tokenizer)
    eos = tokenizer.eos_token_id
    tokens: dict[str, list[int]] = {}
    for token_id, text in vocab.text.items():
        tokens.setdefault(text, []).append(token_id)
    ovocab = OVocabulary(eos, tokens)

    def form_setup(form: EditForm) -> Any:
        return Index(build_regex_from_schema(json.dumps(form.schema())), ovocab)

    def row(index: Any) -> tuple[Callable[[], list[int]], Callable[[int], None], Callable[[], bool]]:
        guide = Guide(index)
        state = {"done": False}

        def allowed() -> list[int]:
            return list(guide.get_tokens())

        def advance(token: int) -> None:
            if token == eos or guide.is_finished():
                state["done"] = True
            else:
                guide.advance(token)
        return allowed, advance, lambda: state["done"]
    return form_setup, row


def lm_format_enforcer_option(tokenizer: Any) -> tuple[Callable, Callable]:
    from lmformatenforcer import JsonSchemaParser
    from lmformatenforcer.integrations.transformers import build_token_enforcer_tokenizer_data
    from lmformatenforcer.tokenenforcer import TokenEnforcer

    data = build_token_enforcer_tokenizer_data(tokenizer)
    eos = tokenizer.eos_token_id

    def form_setup(form: EditForm) -> Any:
        return form.schema()

    def row(schema: Any) -> tuple[Callable[[], list[int]], Callable[[int], None], Callable[[], bool]]:
        enforcer = TokenEnforcer(data, JsonSchemaParser(schema))
        ids: list[int] = []
        state = {"done": False}

        def allowed() -> list[int]:
            return list(enforcer.get_allowed_tokens(ids).allowed_tokens)

        def advance(token: int) -> None:
            state["done"] = token == eos
            ids.append(token)
        return allowed, advance, lambda: state["done"]
    return form_setup, row


def _bits(row: Any) -> list[int]:
    import torch

    words = row.to(torch.int64) & 0xFFFFFFFF
    out = []
    for w, word in enumerate(words.tolist()):
        while word:
            low = word & -word
            out.append(w * 32 + low.bit_length() - 1)
            word ^= low
    return out


OPTIONS = {"spadegym": ours, "llguidance": llguidance_option, "xgrammar": xgrammar_option,
           "outlines-core": outlines_option, "lm-format-enforcer": lm_format_enforcer_option}


def measure(name: str, tokenizer: Any, forms: list[EditForm], walks: int, seed: int) -> dict[str, Any]:
    try:
        t = time.process_time()
        form_setup, row = OPTIONS[name](tokenizer)
        setup = time.process_time() - t
    except Exception as exc:  # noqa: BLE001 - a library that does not load here is a finding, not a crash
        return {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"}
    rng = random.Random(seed)
    per_form, steps, step_s, parsed, total = [], 0, 0.0, 0, 0
    for form in forms:
        try:
            t = time.process_time()
            built = form_setup(form)
            allowed, _, _ = row(built)
            allowed()  # some build lazily: the first step belongs to the setup
            per_form.append(time.process_time() - t)
        except Exception as exc:  # noqa: BLE001
            return {"tokenizer_setup_s": round(setup, 3), "error": f"{type(exc).__name__}: "
                    f"{' '.join(str(exc).split())[:160]}"}
        for _ in range(walks):
            allowed, advance, finished = row(built)
            ids: list[int] = []
            while not finished() and len(ids) < 96:
                t = time.process_time()
                options = allowed()
                step_s += time.process_time() - t
                steps += 1
                if not options:
                    break
                ids.append(rng.choice(options))
                advance(ids[-1])
            total += 1
            parsed += isinstance(form.parse(tokenizer.decode(ids, skip_special_tokens=True)), LevelEdit)
    return {"tokenizer_setup_s": round(setup, 3), "form_setup_ms": round(1000 * sum(per_form) / len(per_form), 2),
            "step_ms": round(1000 * step_s / max(1, steps), 3), "replies_parsed": round(parsed / max(1, total), 3),
            "walks": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory (default: spadegym models prepare smollm2)")
    parser.add_argument("--walks", type=int, default=20, help="random replies per form and option")
    parser.add_argument("--options", default=",".join(OPTIONS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.model or prepare_model("smollm2"))
    forms = [EditForm.of(edit_space(f), edit_space(f).level(lv)) for f, lv in PARENTS]
    result = {name: measure(name, tokenizer, forms, args.walks, args.seed) for name in args.options.split(",")}
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
