"""Extraction of the environment file from designer replies, and the \\boxed brace repair."""

from __future__ import annotations

import pytest

from spadegym.designers.extraction import extract_code, fenced_blocks, repair_boxed_braces

ENV = "class GoodEnv:\n    max_turns = 3\n"
OTHER = "class OtherEnv:\n    max_turns = 4\n"

# (reply, expected code (None = refused), expected refusal, expected fixes)
CASES = [
    pytest.param(f"Here you go:\n```python\n{ENV}```\nEnjoy.", ENV, None, [], id="prose-around"),
    pytest.param(f"<think>draft\n```python\n{OTHER}```\n</think>\n```python\n{ENV}```", ENV, None, [],
                 id="think-block-hides-draft"),
    pytest.param(f"```python\n{OTHER}```\nBetter version:\n```python\n{ENV}```", ENV, None, [],
                 id="last-complete-block"),
    pytest.param(f"```python\n{ENV}```\nUsage:\n```python\nenv = GoodEnv()\n```", ENV, None, [],
                 id="prefers-block-defining-env"),
    pytest.param(f"```text\n{OTHER}```\n```python\n{ENV}```\n```json\n{{}}\n```", ENV, None, [],
                 id="prefers-python-tag"),
    pytest.param(f"```python\n{ENV}", ENV, None, ["closing_fence"], id="missing-closing-fence"),
    pytest.param(f"```py\n{ENV}```", ENV, None, [], id="py-tag"),
    pytest.param(f"Here it is: ```python\n{ENV}```", ENV, None, [], id="fence-after-prose-on-its-line"),
    pytest.param(f"~~~python\n{ENV}~~~", ENV, None, [], id="tilde-fence"),
    pytest.param(f"import random\n{ENV}", f"import random\n{ENV}", None, [], id="bare-code"),
    pytest.param("A game about coins would be nice.", None, "no_code", [], id="no-code"),
    pytest.param("<think>hmm</think>I'm sorry, but I can't help with that.", None, "declined", [],
                 id="declined"),
    pytest.param(f"<think>```python\n{ENV}```", None, "no_code", [], id="code-only-in-unclosed-think"),
    pytest.param("```json\n{\"a\": 1}\n```", None, "no_code", [], id="only-non-python-block"),
]


@pytest.mark.parametrize(("reply", "code", "refusal", "fixes"), CASES)
def test_extract_code(reply: str, code: str | None, refusal: str | None, fixes: list[str]) -> None:
    got = extract_code(reply)
    assert got.code == code
    assert got.refusal == refusal
    assert got.fixes == fixes


def test_windows_line_endings_are_normalised() -> None:
    assert extract_code(f"```python\r\n{ENV}```\r\n".replace("\n", "\r\n")).code == ENV


def test_fenced_blocks_reports_unclosed_block() -> None:
    blocks = fenced_blocks("```python\na = 1\n```\n```python\nb = 2\n")
    assert [(b.code, b.complete) for b in blocks] == [("a = 1", True), ("b = 2", False)]


# (source line inside reset, expected line after repair)
BRACES = [
    pytest.param('f"Answer in \\\\boxed{}."', 'f"Answer in \\\\boxed{{}}."', id="empty-box"),
    pytest.param('f"Reply \\\\boxed{your move}"', 'f"Reply \\\\boxed{{your move}}"', id="placeholder-text"),
    pytest.param('f"Reply \\\\boxed{move} now, {n} left"', 'f"Reply \\\\boxed{{move}} now, {n} left"',
                 id="unbound-name"),
    pytest.param('f"Pick \\\\boxed{n}"', 'f"Pick \\\\boxed{n}"', id="bound-name-is-formatted"),
    pytest.param('f"Pick \\\\boxed{{n}}"', 'f"Pick \\\\boxed{{n}}"', id="already-escaped"),
    pytest.param('"Answer in \\boxed{}"', '"Answer in \\\\boxed{}"', id="single-backslash"),
    pytest.param('r"Answer in \\boxed{}"', 'r"Answer in \\boxed{}"', id="raw-string-untouched"),
    pytest.param('f"""Answer in\n\\\\boxed{}"""', 'f"""Answer in\n\\\\boxed{{}}"""', id="triple-quoted"),
    pytest.param("'# not a comment \\\\boxed{}'", "'# not a comment \\\\boxed{}'", id="plain-string"),
]


@pytest.mark.parametrize(("expr", "expected"), BRACES)
def test_repair_boxed_braces(expr: str, expected: str) -> None:
    source = f"class AEnv:\n    def reset(self, seed=None):\n        n = 3\n        return {expr}, {{}}\n"
    repaired, _ = repair_boxed_braces(source)
    assert repaired == source.replace(expr, expected)
    compile(repaired, "<env>", "exec")


def test_repair_makes_broken_fstring_compile_and_render_the_box() -> None:
    source = 'class AEnv:\n    def reset(self, seed=None):\n        return f"Say \\\\boxed{}", {}\n'
    with pytest.raises(SyntaxError):
        compile(source, "<env>", "exec")
    repaired, fixes = repair_boxed_braces(source)
    assert fixes == ["fstring_braces"]
    namespace: dict = {}
    exec(compile(repaired, "<env>", "exec"), namespace)  # our own trusted snippet
    assert namespace["AEnv"]().reset()[0] == "Say \\boxed{}"


def test_comments_mentioning_boxed_are_left_alone() -> None:
    source = "# reply with \\boxed{} please\nclass AEnv:\n    pass\n"
    assert repair_boxed_braces(source) == (source, [])
