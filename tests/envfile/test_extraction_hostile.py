"""Action extraction reads untrusted replies: linear in their length whatever they hold, and the same
answers as the rule's first (regex) implementation on every arrangement of tags, boxes and braces."""

from __future__ import annotations

import random
import re

import pytest

from spadegym.envfile import extract_action, strip_thinking

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>.*", re.DOTALL | re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{")


def strip_thinking_reference(reply: str) -> str:
    """The rule as first written (quadratic on hostile replies): the specification the new code must match."""
    text = _THINK_BLOCK.sub("", reply)
    if "</think>" in text.lower():
        text = re.split(r"</think>", text, flags=re.IGNORECASE)[-1]
    return _OPEN_THINK.sub("", text)


def extract_action_reference(reply: str) -> str | None:
    text = strip_thinking_reference(reply)
    found = None
    for match in _BOXED.finditer(text):
        depth, start = 1, match.end()
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    found = text[start:i].strip()
                    break
    return found


PIECES = ["<think>", "</think>", "<THINK>", "</Think>", "<thi", "nk>", "\\boxed{", "\\boxed {", "\\boxed", "{", "}",
          "a", "7", " ", "\n", "\\", "<", "/"]


def test_extraction_gives_the_rules_answers_on_every_arrangement() -> None:
    rng = random.Random(0)
    for _ in range(4000):
        reply = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 24)))
        assert strip_thinking(reply) == strip_thinking_reference(reply), reply
        assert extract_action(reply) == extract_action_reference(reply), reply


@pytest.mark.timeout(60)  # before: hours on these (the 41 KB box bomb alone took 6 s); now milliseconds
@pytest.mark.parametrize("reply", [
    "\\boxed{" * 200_000,  # boxes that never close
    "<think>" * 150_000,  # blocks that never close
    "<think>" * 150_000 + "</think>" + "\\boxed{" * 100_000 + "}" + "{" * 100_000,
    "\\boxed{" + "{" * 300_000 + "}" * 299_999,  # one box, all but one brace closed
])
def test_extraction_of_a_megabyte_bomb_is_linear(reply: str) -> None:
    extract_action(reply)
    strip_thinking(reply)
