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
import html
import json
import re
from dataclasses import dataclass

from .contract import ACTION_FORMATS, BOXED, PLAIN, TOOL_CALL, ToolCall, extract_action, strip_thinking
from .static import env_class, parse, statements

#: Bases whose subclasses speak the reference's tool-use protocol (``<tool_call>`` / ``<answer>``).
TOOL_USE_BASES = ("ToolUseBaseEnv",)
#: The module the reference's tool-use base class is importable from.
TOOL_USE_MODULE = "tool_use_base_env"
#: The first line the reference writes into every game file it saves.
REFERENCE_HEADER = "SPADE self-play generated game"
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
    """How the file wants actions delivered: declared, else detected from the code.

    ``tool_call`` (the reference's tool-use protocol) for a class that reaches the reference's
    ``ToolUseBaseEnv`` by any route (a base of another name, an imported alias, the module
    attribute ``tool_use_base_env.ToolUseBaseEnv``), or that lists tools (``get_tools``) and reads
    ``<answer>`` or ``<tool_call>`` tags itself or carries the reference's file header; ``boxed``
    (the reference's delivery) when ``step`` or a helper it reaches looks for a ``\\boxed{`` or an
    ``<answer>`` tag, or the file carries the reference's header; ``plain`` (spadegym's own rule)
    otherwise. An undeclared value raises nothing here: the static checks report it. ``tree``: the
    file already parsed, when the caller has it (a parse costs about a millisecond per 7 kB).
    """
    tree = tree or parse(source, filename)
    cls = env_class(tree)
    declared = declared_action_format(tree, cls)
    if declared in ACTION_FORMATS:
        return declared
    classes, provided = class_bases(tree, cls)
    if any(base in TOOL_USE_BASES for base in provided):
        return TOOL_CALL
    header = reference_header(tree)
    members = _members(classes)
    if "get_tools" in members:
        if header or _step_searches(tree, members, _searches_tag):
            return TOOL_CALL
        return PLAIN  # spadegym's own tool-use file: boxed JSON calls, a bare answer
    if header or _step_searches(tree, members, lambda n: _searches_box(n) or _searches_tag(n)):
        return BOXED
    return PLAIN


#: The rule of delivery in force for each action format, in the words the verdict and transcripts use.
ACTION_RULES = {
    PLAIN: "spadegym rule: the reply's last \\boxed{} is the action (step() gets its content); a reply without "
           "one is a format failure.",
    BOXED: "reference rule: step() gets the reply's first \\boxed{} re-wrapped, and a reply without one as "
           "written (as the reference's rollout sends it).",
    TOOL_CALL: "reference rule: the reference's tool-use protocol (<tool_call> blocks, JSON or XML, go to "
               "execute_tool; a reply with <answer> goes to step() whole).",
}


def reference_header(tree: ast.Module) -> bool:
    """Whether the module docstring is the header the reference writes into the games it saves."""
    doc = ast.get_docstring(tree, clean=True) or ""
    return doc.startswith(REFERENCE_HEADER)


def _provided_names(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """Local names bound to a provided base class (``alias -> class``), and local names of its module."""
    names = {name: name for name in TOOL_USE_BASES}
    modules: set[str] = set()
    for node in statements(tree):  # imports are statements: no expression need be read
        if isinstance(node, ast.ImportFrom) and node.module == TOOL_USE_MODULE:
            names.update({a.asname or a.name: a.name for a in node.names if a.name in TOOL_USE_BASES})
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name == TOOL_USE_MODULE)
    return names, modules


def class_bases(tree: ast.Module, cls: ast.ClassDef) -> tuple[list[ast.ClassDef], list[str]]:
    """The class and the classes of the file it derives from (nearest first), and the provided base
    classes it reaches (by their real names), however the file names them."""
    local = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    aliases, modules = _provided_names(tree)
    found, provided, pending = [cls], [], [cls]
    while pending:
        node = pending.pop(0)
        for base in node.bases:
            if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id in modules:
                name = base.attr if base.attr in TOOL_USE_BASES else None
            elif isinstance(base, ast.Name):
                if base.id in local and local[base.id] not in found:
                    found.append(local[base.id])
                    pending.append(local[base.id])
                    continue
                name = aliases.get(base.id, base.id)
            else:
                name = None
            if name is not None and name not in provided:
                provided.append(name)
    return found, provided


@dataclass(frozen=True)
class ToolMethod:
    """What a ``tool_<name>`` method accepts: its parameters, those without a default, and ``**kwargs``."""

    parameters: tuple[str, ...]
    required: tuple[str, ...]
    any_keyword: bool


def tool_methods(tree: ast.Module, cls: ast.ClassDef) -> dict[str, ToolMethod] | None:
    """The ``tool_<name>`` methods the reference's base class dispatches calls to, by tool name; None
    when the class does not use that dispatch (it does not reach ``ToolUseBaseEnv``, or it defines
    its own ``execute_tool``)."""
    classes, provided = class_bases(tree, cls)
    members = _members(classes)
    if not any(base in TOOL_USE_BASES for base in provided) or "execute_tool" in members:
        return None
    found = {}
    for name, node in members.items():
        if name.startswith("tool_") and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = [a.arg for a in args.posonlyargs + args.args][1:]  # self aside
            defaults = len(args.defaults)
            required = positional[:len(positional) - defaults] if defaults else positional
            required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
            found[name[len("tool_"):]] = ToolMethod(tuple(positional + [a.arg for a in args.kwonlyargs]),
                                                    tuple(required), args.kwarg is not None)
    return found


def _members(classes: list[ast.ClassDef]) -> dict[str, ast.AST]:
    """Names defined in the class bodies, the nearest class first (as attribute lookup finds them)."""
    members: dict[str, ast.AST] = {}
    for node in classes:
        for item in node.body:
            _collect(item, members, overwrite=False)
    return members


def _step_searches(tree: ast.Module, members: dict[str, ast.AST], test) -> bool:
    """Whether ``step``, or code it reaches by name (methods, module functions), passes ``test``."""
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
            if test(sub):
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


_TAG = re.compile(r"<(?:answer|tool_call)>")


def _searches_tag(node: ast.AST) -> bool:
    """A string constant naming the reference's ``<answer>`` or ``<tool_call>`` tag."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(_TAG.search(node.value))


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
    An entry with a number placeholder (``buy N``, ``sell <amount>``) stands for the
    numbers the observation allows (``fill_placeholders``); other placeholders in
    angle brackets (``\\boxed{<answer>}``) are skipped.
    """
    found: list[str] = []

    def add(item: str | None) -> None:
        for action in fill_placeholders(item, observation) if item else []:
            if action not in found and "<" not in action and len(found) < _MAX_MENU:
                found.append(action)

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


# A number placeholder in a menu entry: a capital letter beside other words (``buy N``), or a
# numeric word in angle brackets or braces (``<amount>``, ``{n}``).
_LETTER = re.compile(r"(?<![\w<{])([NMKXYZ])(?![\w>}])")
_NAMED = re.compile(r"<(n|x|k|num|number|amount|count|qty|quantity|value|int|integer|index|price|size|units?)>|"
                    r"\{(n|x|k|num|number|amount|count|qty|quantity|value|index)\}", re.IGNORECASE)
_RANGE = re.compile(r"(-?\d+)\s*(?:\.\.\.?|-|\u2013|\bto\b)\s*(-?\d+)|between\s+(-?\d+)\s+and\s+(-?\d+)",
                    re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?!\w|\.\d)")
_MAX_FILLS = 12


def _numbers_for(observation: str) -> list[str]:
    """The numbers an observation allows: its ranges (``1..9``, ``1-9``, ``between 1 and 9``), at most
    ``_MAX_FILLS`` of each spread evenly; else the numbers it mentions, and 1."""
    values: list[int] = []
    for match in _RANGE.finditer(observation):
        low, high = (int(g) for g in (match.groups()[:2] if match.group(1) else match.groups()[2:]))
        if low > high or high - low > 10_000:
            continue
        step = max(1, (high - low) // (_MAX_FILLS - 1))
        values += [*range(low, high + 1, step), high]
    if not values:
        values = [int(n) for n in _NUMBER.findall(observation) if abs(int(n)) <= 10**9][:_MAX_FILLS] + [1]
    return [str(v) for v in dict.fromkeys(values)]


def fill_placeholders(item: str, observation: str) -> list[str]:
    """A menu entry as the actions it stands for: itself, or, when it holds a number placeholder
    (``buy N``, ``sell <amount>``), one action per number the observation allows (its ranges, else
    the numbers it mentions). A lone letter is an action (``N`` for north), never a placeholder, and
    an entry with a letter placeholder is kept as written too."""
    named = _NAMED.search(item)
    letter = _LETTER.search(item) if len(item.split()) > 1 else None
    if not (named or letter):
        return [item]
    filled = [(_NAMED if named else _LETTER).sub(number, item) for number in _numbers_for(observation)]
    return filled if named else [*filled, item]  # "move N" may mean north: the entry stays too


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


# name(arguments), the arguments holding at most one level of parentheses (a tuple literal).
_CALL_NOTATION = re.compile(r"\b([A-Za-z_]\w*)\s*\(((?:[^()]|\([^()]*\))*)\)")
_ANSWER_NOTATION = re.compile(r"<answer>(.*?)</answer>|\bANSWER\s*:\s*(.+?)\s*$", re.DOTALL | re.IGNORECASE)


def _as_json(value: object) -> object:
    """A literal as JSON data: tuples and sets become lists (sets sorted when they can be); anything else
    that JSON cannot hold (``...``, bytes, complex numbers, non-string keys) raises ValueError: such a call
    is a placeholder in prose (``add(k=...)``), not a call the gate can play."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return value
    if isinstance(value, (list, tuple)):
        return [_as_json(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [_as_json(v) for v in value]
        try:
            return sorted(items)  # type: ignore[type-var]
        except TypeError:
            return items
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _as_json(v) for k, v in value.items()}
    raise ValueError(f"{type(value).__name__} is not JSON data")


def _call_arguments(text: str, parameters: list[str]) -> dict[str, object] | None:
    """``a=1, b="x"`` (or positional values, matched to the declared parameters in order) as a dict of JSON
    data; None when the text is no call of literals (``k=...``, names, expressions)."""
    try:
        call = ast.parse(f"f({text})", mode="eval").body
        assert isinstance(call, ast.Call)
        values = {k.arg: _as_json(ast.literal_eval(k.value)) for k in call.keywords if k.arg}
        for name, arg in zip(parameters, call.args):
            values.setdefault(name, _as_json(ast.literal_eval(arg)))
    except (SyntaxError, ValueError, TypeError, AssertionError, RecursionError, MemoryError):
        return None
    return values if len(call.args) <= len(parameters) else None


def tool_plan(text: str, tools: list[dict]) -> list[str] | None:
    """A tool game's text ``solution()`` in the call notation the reference's prompts show
    (``1. cd(path="docs") -> Changed 2. mv(src="a", dst="b") ... ANSWER: x`` or ``<answer>done</answer>``)
    as the actions the gate plays: each call of a listed tool as a JSON tool call, in order, then the
    answer as ``<answer>...</answer>``. None when the text names no listed tool."""
    declared: dict[str, list[str]] = {}
    for schema in tools:
        function = schema.get("function") if isinstance(schema.get("function"), dict) else schema
        name = function.get("name")
        spec = function.get("parameters") if isinstance(function.get("parameters"), dict) else {}
        properties = spec.get("properties") if isinstance(spec.get("properties"), dict) else {}
        if isinstance(name, str):
            declared[name] = list(properties)
    actions = []
    for match in _CALL_NOTATION.finditer(text):
        name = match.group(1)
        arguments = _call_arguments(match.group(2), declared[name]) if name in declared else None
        if arguments is not None:
            actions.append(json.dumps({"name": name, "arguments": arguments}))
    if not actions:
        return None
    answer = next((m for m in _ANSWER_NOTATION.finditer(text)), None)
    if answer is not None:
        actions.append(f"<answer>{(answer.group(1) or answer.group(2) or '').strip()}</answer>")
    return actions


def is_prose(text: str) -> bool:
    """A text ``solution()`` that reads as a plan rather than one answer (several items or a sentence)."""
    words = text.split()
    return "\n" in text.strip() or len(words) >= 4 or bool(solution_sequences(text))


# -- the reference's tool-use replies --------------------------------------------------------------

_TOOL_CALL_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_XML_FUNCTION = re.compile(r"<function=(\w+)>(.*?)</function>", re.DOTALL)
_XML_PARAMETER = re.compile(r"<parameter=(\w+)>(.*?)</parameter>", re.DOTALL)
_JSON_CALL = re.compile(r'\{\s*"name"\s*:\s*"(\w+)"\s*,\s*"arguments"\s*:\s*(\{.*?\})\s*\}', re.DOTALL)


def _json_value(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _xml_call(body: str) -> ToolCall | None:
    """The Qwen3.5 form: ``<function=name><parameter=key>value</parameter>...</function>``; each value is
    read as JSON when it is JSON (numbers, booleans, lists), else kept as text (HTML entities decoded)."""
    found = _XML_FUNCTION.search(body)
    if not found:
        return None
    arguments: dict[str, object] = {}
    for key, raw in _XML_PARAMETER.findall(found.group(2)):
        value = html.unescape(raw.strip())
        parsed = _json_value(value)
        arguments[key] = value if parsed is None and value != "null" else parsed
    return ToolCall(found.group(1), arguments)


def _json_call(body: str) -> ToolCall | None:
    """The JSON form: ``{"name": ..., "arguments": {...}}`` (``"parameters"`` also names the arguments,
    and arguments given as a JSON string are read); a call inside other text is found too."""
    data = _json_value(body.strip())
    if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"].strip():
        arguments = data.get("arguments", data.get("parameters", {}))
        if isinstance(arguments, str):
            arguments = _json_value(arguments) if arguments.strip() else {}
        return ToolCall(data["name"].strip(), arguments if isinstance(arguments, dict) else {})
    embedded = _JSON_CALL.search(body)
    if embedded:
        arguments = _json_value(embedded.group(2))
        return ToolCall(embedded.group(1), arguments if isinstance(arguments, dict) else {})
    return None


def parse_tagged_calls(reply: str) -> list[ToolCall]:
    """Every tool call in a reply's ``<tool_call>`` blocks, in order, as the reference reads them.

    A block holds the Qwen3.5 XML form (``<function=name><parameter=key>value</parameter></function>``)
    or JSON (``{"name": ..., "arguments": {...}}``); a block that is neither is no call (the reply
    then goes to ``step``, whose format error the game reports).
    """
    calls = []
    for body in _TOOL_CALL_TAG.findall(strip_thinking(reply)):
        call = _xml_call(body) or _json_call(body)
        if call is not None:
            calls.append(call)
    return calls


#: The reference's fixed-pool sources spadegym cannot read, and why (docs/reference-compatibility.md).
UNSUPPORTED_SOURCES = {
    "rlve:": "RLVE environments are not on the package registry (the reference keeps its own copy)",
    "gem:": "GEM environments are objects of the gem-llm package, not standalone files a sandbox can run",
}


def unsupported_source(spec: str) -> str | None:
    """One sentence when ``spec`` names a source of the reference that spadegym cannot read, else None."""
    for prefix, why in UNSUPPORTED_SOURCES.items():
        if spec.strip().lower().startswith(prefix):
            return (f"{spec.strip()!r}: {why}, so spadegym cannot import them; use reasoning-gym:TASK, "
                    "environment files or a pool instead (see docs/reference-compatibility.md).")
    return None


__all__ = [
    "ACTION_FORMAT_NAME", "ACTION_RULES", "REFERENCE_HEADER", "TOOL_USE_BASES", "UNSUPPORTED_SOURCES", "TOOL_USE_MODULE", "action_format", "class_bases",
    "ToolMethod", "declared_action_format", "fill_placeholders", "is_prose", "listed_actions", "tool_methods",
    "tool_plan", "unsupported_source",
    "parse_tagged_calls", "read_menu", "reference_header", "solution_sequences",
]
