"""What can be read from an environment file without running it (host-safe)."""

from __future__ import annotations

import ast
import gc
import hashlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from .contract import OptionalMethods

ENV_CLASS_SUFFIX = "Env"
METADATA_NAMES = ("SKILL", "DESCRIPTION", "DIFFICULTY")
#: Base classes the runtime provides (as the SPADE reference injects them): never the environment class.
PROVIDED_BASE_CLASSES = ("Env", "ToolUseBaseEnv", "TerminalBaseEnv")


class SourceError(ValueError):
    """The file cannot be an environment: the message says what to change."""


# CPython 3.11 before 3.11.8 shares the AST validator's depth counter between threads
# ("AST constructor recursion depth mismatch"); the gate parses files in threads.
_PARSE_LOCK = threading.Lock()


def parse_ast(source: str, filename: str = "<env>", mode: str = "exec") -> ast.AST:
    """``ast.parse`` under the process-wide parse lock; raises what ``ast.parse`` raises.

    The cyclic collector is paused meanwhile: a syntax tree holds no reference cycles, and the
    collections its tens of thousands of new nodes would set off (each one re-walking the young
    objects, and now and then the whole heap) cost more than the parse itself in a large process.
    """
    with _PARSE_LOCK:
        collecting = gc.isenabled()
        gc.disable()
        try:
            return ast.parse(source, filename, mode)
        finally:
            if collecting:
                gc.enable()


def parse(source: str, filename: str = "<env>") -> ast.Module:
    try:
        return parse_ast(source, filename)
    except SyntaxError as exc:
        line = f" at line {exc.lineno}" if exc.lineno else ""
        raise SourceError(f"Syntax error{line}: {exc.msg}; fix the code so that it parses.") from None
    except (RecursionError, MemoryError):  # the parser gives up on deep nesting: the host must not
        raise SourceError("The code nests too deeply for the parser (a very long chain of operators or "
                          "brackets); write it as several shorter statements.") from None
    except ValueError as exc:  # e.g. a null byte in the source
        raise SourceError(f"The code cannot be parsed ({exc}); remove the offending characters.") from None


_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def statements(root: ast.AST) -> list[ast.AST]:
    """The statements under ``root`` at any depth (with ``except`` handlers and ``case`` clauses), in no
    set order: what imports and definitions are sought among, skipping every expression (statements
    never sit inside an expression), a tenth of a file's nodes."""
    found: list[ast.AST] = []
    pending = [root]
    while pending:
        node = pending.pop()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                blocks = [item for item in value if isinstance(item, _BLOCKS)]
                found += blocks
                pending += blocks
    return found


def env_class_nodes(tree: ast.Module) -> list[ast.ClassDef]:
    return [
        node for node in tree.body
        if isinstance(node, ast.ClassDef)
        and node.name.endswith(ENV_CLASS_SUFFIX) and node.name not in PROVIDED_BASE_CLASSES
    ]


def find_env_class_name(source: str, filename: str = "<env>") -> str:
    """The one top-level class whose name ends in ``Env``."""
    return env_class(parse(source, filename)).name


def env_class(tree: ast.Module) -> ast.ClassDef:
    """The environment class of a parsed file: the first top-level class whose name ends in ``Env``
    (the reference's loader takes the first); SourceError when there is none.

    spadegym's own rule wants exactly one such class; the static checks say which rule is in force
    for a file with several (``validate.static_checks``).
    """
    classes = env_class_nodes(tree)
    if not classes:
        raise SourceError(
            "No environment class found: define exactly one top-level class whose name ends in 'Env'."
        )
    return classes[0]


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


@dataclass
class EnvFileInfo(OptionalMethods):
    """Metadata read statically from an environment file."""

    class_name: str
    methods: set[str] = field(default_factory=set)
    skill: str | None = None
    description: str | None = None
    difficulty: dict[str, Any] = field(default_factory=dict)
    static_hint: str | None = None
    declared_max_turns: int | None = None


def inspect_source(source: str, filename: str = "<env>") -> EnvFileInfo:
    """Read the class name, methods and metadata constants without executing anything."""
    tree = parse(source, filename)
    cls = env_class(tree)
    name = cls.name
    info = EnvFileInfo(class_name=name)
    values: dict[str, Any] = {}
    for scope in (tree.body, cls.body):
        for node in scope:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        values[target.id] = _literal(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                values[node.target.id] = _literal(node.value)
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            info.methods.add(node.name)
    info.skill = values.get("SKILL") if isinstance(values.get("SKILL"), str) else None
    info.description = values.get("DESCRIPTION") if isinstance(values.get("DESCRIPTION"), str) else None
    if isinstance(values.get("DIFFICULTY"), dict):
        info.difficulty = values["DIFFICULTY"]
    if isinstance(values.get("hint"), str):
        info.static_hint = values["hint"]
    mt = values.get("max_turns")
    if isinstance(mt, int) and not isinstance(mt, bool) and mt > 0:
        info.declared_max_turns = mt
    return info


_COMMENT = re.compile(r"#.*$", re.MULTILINE)


def normalized_code_hash(source: str) -> str:
    """A hash that ignores comments, docstrings, blank lines and formatting.

    Two files that differ only cosmetically are the same level (duplicate detection).
    """
    try:
        tree = parse_ast(source)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                    and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body[0] = ast.Pass()
        text = ast.dump(tree, annotate_fields=False)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        text = "\n".join(line.strip() for line in _COMMENT.sub("", source).splitlines() if line.strip())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


