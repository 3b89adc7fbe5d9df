"""From a designer model's reply to the environment file it meant to write.

Two jobs, both host-safe (nothing here executes the code):

* ``extract_code`` picks the right fenced block out of a reply that may hold
  prose, ``<think>`` blocks, several blocks or a missing closing fence.
* ``repair_boxed_braces`` fixes the commonest mechanical bug of generated
  environments: ``\\boxed{}`` written inside an f-string with single braces
  (``f"Answer in \\boxed{}"`` does not even compile) and ``"\\boxed"`` written
  with one backslash in a normal string (``\\b`` is a backspace).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..envfile import strip_thinking
from ..envfile.loader import prelude
from ..envfile.static import parse_ast

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.#-]*)[^\n`]*$")
# An opening fence at the end of a line of prose ("Here it is: ```python"); closing fences stand alone.
_TRAILING_OPEN = re.compile(r"(`{3,}|~{3,})[ \t]*([\w+.#-]*)[ \t]*$")
_ENV_CLASS = re.compile(r"^class[ \t]+\w*\wEnv\b", re.MULTILINE)
_CODE_START = re.compile(r"^(import |from |class |def |[A-Z_][A-Z0-9_]* *=|#|\"\"\"|''')", re.MULTILINE)
_PYTHON_TAGS = {"python", "py", "python3", "py3"}
_REFUSAL = re.compile(
    r"\b(i can(?:no|')t|i cannot|i won't|i will not|i'm sorry|i am sorry|i'm unable|i am unable|"
    r"unable to (?:help|comply|assist)|not able to (?:help|comply|assist))\b",
    re.IGNORECASE,
)


@dataclass
class Block:
    """One fenced block of a reply."""

    lang: str
    code: str
    complete: bool  # False when the closing fence is missing

    @property
    def defines_env(self) -> bool:
        return bool(_ENV_CLASS.search(self.code))

    @property
    def is_python(self) -> bool:
        return self.lang.lower() in _PYTHON_TAGS


@dataclass
class Extraction:
    """What ``extract_code`` found: the code, or why there is none."""

    code: str | None
    blocks: int = 0
    complete: bool = True  # False: taken from a block without closing fence
    refusal: str | None = None  # "no_code" or "declined" when code is None
    fixes: list[str] = field(default_factory=list)  # mechanical repairs applied


def fenced_blocks(text: str) -> list[Block]:
    """All fenced blocks, in order; an unclosed last block runs to the end."""
    blocks: list[Block] = []
    lines = text.splitlines()
    opening: tuple[str, str] | None = None
    body: list[str] = []
    for line in lines:
        if opening is None:
            match = _FENCE.match(line) or _TRAILING_OPEN.search(line)
            if match:
                opening, body = (match.group(1), match.group(2)), []
            continue
        fence = opening[0]
        stripped = line.strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            blocks.append(Block(opening[1], "\n".join(body), True))
            opening = None
        else:
            body.append(line)
    if opening is not None and body:
        blocks.append(Block(opening[1], "\n".join(body), False))
    return blocks


def _choose(blocks: list[Block]) -> Block | None:
    # Preference: the last complete python block defining an Env class, then any
    # complete block defining one, then an unclosed one, then the last python block.
    tiers = (
        lambda b: b.complete and b.is_python and b.defines_env,
        lambda b: b.complete and b.defines_env,
        lambda b: b.defines_env,
        lambda b: b.is_python or not b.lang,
    )
    for accept in tiers:
        chosen = [b for b in blocks if accept(b)]
        if chosen:
            return chosen[-1]
    return None


def extract_code(reply: str) -> Extraction:
    """The environment file inside a designer reply (see the module docstring)."""
    text = strip_thinking(reply.replace("\r\n", "\n"))
    blocks = fenced_blocks(text)
    chosen = _choose(blocks)
    if chosen is not None and chosen.code.strip():
        code, complete = chosen.code, chosen.complete
    elif not blocks and _ENV_CLASS.search(text):
        # Bare code without fences: start at the first line that looks like code.
        start = _CODE_START.search(text)
        code, complete = text[start.start() if start else 0:], True
    else:
        refusal = "declined" if _REFUSAL.search(text) else "no_code"
        return Extraction(None, blocks=len(blocks), refusal=refusal)
    code = code.strip("\n") + "\n"
    code, fixes = repair_boxed_braces(code)
    if not complete:
        fixes.insert(0, "closing_fence")
    return Extraction(code, blocks=len(blocks), complete=complete, fixes=fixes)


# --- \boxed{} inside string literals -------------------------------------------------

_LITERAL_START = re.compile(r"([rRbBuUfF]{0,2})('''|\"\"\"|'|\")")
_BOXED_IN_LITERAL = re.compile(r"(\\\\|\\)boxed(\s*)\{")


@dataclass
class _Literal:
    start: int
    end: int
    prefix: str
    quote: str

    @property
    def body_start(self) -> int:
        return self.start + len(self.prefix) + len(self.quote)

    @property
    def body_end(self) -> int:
        return self.end - len(self.quote)


def string_literals(source: str) -> Iterator[_Literal]:
    """String literals of a (possibly broken) Python source, found by scanning.

    A scanner rather than ``tokenize``: the code we repair often does not
    tokenize, and f-strings tokenize differently across Python versions.
    """
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if ch == "#":
            nl = source.find("\n", i)
            if nl < 0:
                return
            i = nl + 1
            continue
        match = _LITERAL_START.match(source, i)
        if match and (i == 0 or not (source[i - 1].isalnum() or source[i - 1] == "_")):
            prefix, quote = match.group(1), match.group(2)
            j = match.end()
            closed = False
            while j < n:
                if source[j] == "\\":
                    j += 2
                    continue
                if source.startswith(quote, j):
                    j += len(quote)
                    closed = True
                    break
                if len(quote) == 1 and source[j] == "\n":
                    break
                j += 1
            if closed:
                yield _Literal(i, j, prefix, quote)
            i = max(j, i + 1)
            continue
        i += 1


def _matching_brace(text: str, start: int) -> int:
    """Index of the ``}`` closing the ``{`` at ``start - 1``; -1 if none."""
    depth = 1
    for k in range(start, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return -1


def _bound_names(source: str) -> set[str] | None:
    """Names the module binds anywhere (None when it does not parse)."""
    try:
        tree = parse_ast(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names = set(dir(builtins)) | set(prelude())
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _meant_as_text(expr: str, bound: set[str] | None) -> bool:
    """Is ``{expr}`` after ``\\boxed`` a placeholder for the agent, not a value to format?"""
    if not expr.strip():
        return True  # "\\boxed{}": an empty slot for the agent
    try:
        tree = parse_ast(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True  # "{your answer}", "{A, B or C}" ...
    if bound is None:
        return False
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return bool(used - bound)  # "{move}" where nothing is called move


def repair_boxed_braces(source: str) -> tuple[str, list[str]]:
    """Fix ``\\boxed{...}`` inside string literals; returns the code and the fixes applied.

    * In an f-string, single braces after ``\\boxed`` that hold no formattable
      expression are doubled: ``f"...\\boxed{}"`` -> ``f"...\\boxed{{}}"``.
    * In a non-raw string, ``\\boxed`` with one backslash (a backspace and
      "oxed") becomes ``\\\\boxed``.
    """
    bound = _bound_names(source)
    if bound is None:
        # Unparsable: try the doubling first, then judge names on the repaired code.
        first, _ = _repair_pass(source, None)
        bound = _bound_names(first)
    repaired, fixes = _repair_pass(source, bound)
    return repaired, fixes


def _repair_pass(source: str, bound: set[str] | None) -> tuple[str, list[str]]:
    pieces: list[str] = []
    last = 0
    fixes: set[str] = set()
    for lit in string_literals(source):
        body = source[lit.body_start:lit.body_end]
        if "boxed" not in body:
            continue
        prefix = lit.prefix.lower()
        new_body = body
        if "r" not in prefix:
            new_body, count = re.subn(r"(?<!\\)((?:\\\\)*)\\boxed", r"\1\\\\boxed", new_body)
            if count:
                fixes.add("boxed_escape")
        if "f" in prefix:
            new_body, changed = _double_boxed_braces(new_body, bound)
            if changed:
                fixes.add("fstring_braces")
        if new_body != body:
            pieces.append(source[last:lit.body_start])
            pieces.append(new_body)
            last = lit.body_end
    pieces.append(source[last:])
    return "".join(pieces), sorted(fixes)


def _double_boxed_braces(body: str, bound: set[str] | None) -> tuple[str, bool]:
    out: list[str] = []
    last = 0
    changed = False
    for match in _BOXED_IN_LITERAL.finditer(body):
        open_at = match.end() - 1
        if open_at < last:
            continue
        if body.startswith("{{", open_at):
            continue  # already escaped
        close = _matching_brace(body, open_at + 1)
        if close < 0:
            continue
        inner = body[open_at + 1:close]
        if not _meant_as_text(inner, bound):
            continue
        out.append(body[last:open_at])
        out.append("{{" + inner + "}}")
        last = close + 1
        changed = True
    out.append(body[last:])
    return "".join(out), changed
