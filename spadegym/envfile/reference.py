"""The SPADE reference's file conventions, read from source or text (host-safe).

The reference (spade-rl/spade) writes and loads environments a little
differently from spadegym's own contract; ``contract.REFERENCE_CONVENTIONS``
lists each difference and how spadegym meets it. This module holds the
readers those conventions need: which action format a file expects
(``action_format``), the action menu its observations print (``read_menu``),
a prose ``solution()`` read as a sequence of actions (``solution_sequences``)
and the ``<tool_call>`` / ``<answer>`` replies of its tool-use games
(``parse_tagged_calls``). Nothing here runs environment code.
"""

from __future__ import annotations

import ast
import json
import re

from .contract import ACTION_FORMATS, BOXED, PLAIN, TOOL_CALL, ToolCall, extract_action, strip_thinking
from .static import env_class, parse

#: Bases whose subclasses speak the reference's tool-use protocol (``<tool_call>`` / ``<answer>``).
TOOL_USE_BASES = ("ToolUseBaseEnv",)
#: The module constant (or class attribute) by which a file declares its action format.
ACTION_FORMAT_NAME = "ACTION_FORMAT"

# A regular expression (as source text) that matches a box: r'\\boxed\{' or '\\\\boxed'.
_BOX_REGEX = re.compile(r"\\\\boxed|boxed\\\{")
# String methods that look for a literal "\boxed{" in the action.
_SEARCHES = frozenset({"find", "rfind", "index", "rindex", "split", "rsplit", "partition", "rpartition",
                       "replace", "startswith", "endswith", "count", "removeprefix", "removesuffix"})


def declared_action_format(tree: ast.Module, cls: ast.ClassDef) -> str | None:
    """The value of ``ACTION_FORMAT`` (module constant or class attribute), as written."""
    found = None
    for scope in (tree.body, cls.body):
        for node in scope:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == ACTION_FORMAT_NAME
                                                    for t in node.targets):
                found = node.value.value if isinstance(node.value, ast.Constant) else repr(ast.unparse(node.value))
    return found


def action_format(source: str, filename: str = "<env>", tree: ast.Module | None = None) -> str:
    """How the file wants actions delivered: declared, else detected from the code of ``step``.

    ``tool_call`` for subclasses of the reference's ``ToolUseBaseEnv``; ``boxed``
    when ``step`` or a helper it reaches looks for a ``\\boxed{`` itself (a regex
    such as ``r'\\\\boxed\\{(.*)\\}'`` or ``"\\\\boxed{" in action``); ``plain`` otherwise.
    An undeclared value raises nothing here: the static checks report it. ``tree``: the file
    already parsed, when the caller has it (a parse costs about a millisecond per 7 kB).
    """
    tree = tree or parse(source, filename)
    cls = env_class(tree)
    declared = declared_action_format(tree, cls)
    if declared in ACTION_FORMATS:
        return declared
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    if any(base in TOOL_USE_BASES for base in _base_names(cls, classes)):
        return TOOL_CALL
    return BOXED if _step_parses_box(tree, cls, classes) else PLAIN


def _base_names(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[str]:
    """Names of the class's bases, through the bases defined in the same file."""
    names, pending = [], [cls]
    while pending:
        node = pending.pop()
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id not in names:
                names.append(base.id)
                if base.id in classes:
                    pending.append(classes[base.id])
    return names


def _step_parses_box(tree: ast.Module, cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> bool:
    """Whether ``step``, or code it reaches by name, searches the action for a box."""
    members: dict[str, ast.AST] = {}
    for node in [cls, *(classes[b] for b in _base_names(cls, classes) if b in classes)]:
        for item in node.body:
            _collect(item, members, overwrite=False)
    module: dict[str, ast.AST] = {}
    for item in tree.body:
        _collect(item, module, overwrite=True)
    step = members.get("step")
    if step is None:
        return False
    pending, seen = [step], {id(step)}
    while pending:
        node = pending.pop()
        for sub in ast.walk(node):
            if _searches_box(sub):
                return True
            target = None
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                target = members.get(sub.attr)
            elif isinstance(sub, ast.Name):
                target = module.get(sub.id)
            if target is not None and id(target) not in seen:
                seen.add(id(target))
                pending.append(target)
    return False


def _collect(item: ast.stmt, into: dict[str, ast.AST], overwrite: bool) -> None:
    names: list[str] = []
    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names = [item.name]
    elif isinstance(item, ast.Assign):
        names = [t.id for t in item.targets if isinstance(t, ast.Name)]
    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
        names = [item.target.id]
    for name in names:
        if overwrite or name not in into:
            into[name] = item


def _searches_box(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _BOX_REGEX.search(node.value):
        return True
    literal = [a for a in _call_or_compare_operands(node)
               if isinstance(a, ast.Constant) and isinstance(a.value, str) and "\\boxed" in a.value]
    return bool(literal)


def _call_or_compare_operands(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
        return [node.left]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SEARCHES:
        return list(node.args)
    return []


# -- action menus printed in observations --------------------------------------------------------

_MENU_HEADER = re.compile(r"^\s*(?:available\s+|valid\s+|possible\s+|legal\s+)?(?:actions|commands|moves|options)"
                          r"\s*(?:\([^)]*\))?\s*:\s*(.*)$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+(.+?)\s*$")
_INLINE_BOX = re.compile(r"\\boxed\{([^{}\n]{1,60})\}")
_MAX_MENU = 64


def _clean_item(text: str) -> str | None:
    """One menu entry: the boxed action if there is one, else the text before an explanation."""
    boxed = _INLINE_BOX.findall(text)
    if boxed:
        return boxed[0].strip()
    item = re.split(r"\s+(?:-|\u2013|\u2014)\s+|:\s|\s\(", text, maxsplit=1)[0]
    item = item.strip().strip("`'\".,;").strip()
    return item if item and len(item) <= 60 else None


def read_menu(observation: str) -> list[str]:
    """The actions an observation lists, in order (empty when it lists none).

    Reads the reference's menus: bullets or numbered lines under a header such
    as ``Available actions:``, a header line listing actions after its colon
    (comma-separated or boxed), and boxed examples anywhere (``\\boxed{go north}``).
    Placeholders in angle brackets (``\\boxed{<answer>}``) are skipped.
    """
    found: list[str] = []

    def add(item: str | None) -> None:
        if item and item not in found and "<" not in item and len(found) < _MAX_MENU:
            found.append(item)

    lines = observation.splitlines()
    for i, line in enumerate(lines):
        header = _MENU_HEADER.match(line)
        if not header:
            continue
        rest = header.group(1).strip()
        if rest:
            boxed = _INLINE_BOX.findall(rest)
            for item in (boxed or re.split(r"\s*[,;|/]\s*|\s+or\s+", rest)):
                add(_clean_item(item))
            continue
        for follow in lines[i + 1:]:
            bullet = _BULLET.match(follow)
            if not bullet:
                if follow.strip():
                    break
                continue
            add(_clean_item(bullet.group(1)))
    for item in _INLINE_BOX.findall(observation):
        add(item.strip())
    return [item for item in found if item.lower() not in {"answer", "action", "your_answer", "your answer", "..."}]


def listed_actions(valid_actions: list[str] | None, observation: str,
                   previous: list[str] | None = None) -> list[str] | None:
    """The actions a player can take now: ``valid_actions()``, else the observation's menu, else the last ones."""
    if valid_actions is not None:
        return valid_actions
    return read_menu(observation) or previous


# -- prose solutions -----------------------------------------------------------------------------

_NUMBERED = re.compile(r"(?:^|\s)(?:step\s*)?\d{1,2}[.):]\s+", re.IGNORECASE)
_BOXES = re.compile(r"\\boxed\{")


def solution_sequences(text: str) -> list[list[str]]:
    """Ways to read a text ``solution()`` as several actions, most literal first.

    Each line, each numbered step, each comma- or semicolon-separated item, and
    each ``\\boxed{}`` in order; sequences that repeat an earlier one are dropped.
    """
    text = text.strip()
    candidates: list[list[str]] = []
    boxes = []
    for match in _BOXES.finditer(text):
        content = extract_action(text[match.start():].split("\n", 1)[0]) or ""
        boxes.append(content)
    candidates.append([b for b in boxes if b])
    candidates.append([line for line in (ln.strip(" -*\t") for ln in text.splitlines()) if line])
    candidates.append([p.strip(" ,;.") for p in _NUMBERED.split(text) if p.strip(" ,;.")])
    candidates.append([p.strip(" .") for p in re.split(r"[;,\n]|\bthen\b", text) if p.strip(" .")])
    out: list[list[str]] = []
    for seq in candidates:
        if len(seq) > 1 and seq not in out:  # one item is the text itself, already played as one action
            out.append(seq)
    return out


def is_prose(text: str) -> bool:
    """A text ``solution()`` that reads as a plan rather than one answer (several items or a sentence)."""
    words = text.split()
    return "\n" in text.strip() or len(words) >= 4 or bool(solution_sequences(text))


# -- the reference's tool-use replies --------------------------------------------------------------

_TOOL_CALL_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def parse_tagged_calls(reply: str) -> list[ToolCall]:
    """Every well-formed ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` in a reply, in order."""
    calls = []
    for body in _TOOL_CALL_TAG.findall(strip_thinking(reply)):
        try:
            data = json.loads(body.strip())
        except (ValueError, RecursionError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"].strip():
            continue
        arguments = data.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):
                arguments = None
        calls.append(ToolCall(data["name"].strip(), arguments if isinstance(arguments, dict) else {}))
    return calls


__all__ = [
    "ACTION_FORMAT_NAME", "TOOL_USE_BASES", "action_format", "declared_action_format", "is_prose", "listed_actions",
    "parse_tagged_calls", "read_menu", "solution_sequences",
]
