"""An environment file rewritten so that the SPADE reference's loader and rollout play it as spadegym does.

``spadegym export --format spade`` writes each level through ``for_reference``
(the export then checks the result with the gate, as played the reference's
way, and leaves out what does not pass). The reference differs from spadegym's
runtime in four ways a file may rely on, and the rewrite bridges each:

- **Names.** spadegym's prelude provides names without import (``dataclass``,
  ``field``, the ``typing`` names, ``deque``, ...); the reference injects only
  some. Every prelude name the file uses and does not bind gets an explicit
  import after the module docstring.
- **Actions.** The reference delivers ``\\boxed{action}`` (its first box) or, for a
  reply without one, the reply as written. A spadegym ``plain`` file expects the
  bare action, so its ``step`` gets a box's content (an ``<answer>``'s in a tool
  game), and everything else as written.
- **Tool results.** The reference reads ``execute_tool``'s result as a dict with
  ``"output"``; a plain tool game's text or JSON result is wrapped so, and a tool
  that ends the episode (it returns the ``step`` tuple) ends it at the next reply,
  since only ``step`` ends an episode there (``solution()`` gets that closing reply);
  a tool that plays through the file's own ``step`` (the built-in tool-use
  families) still reaches it.
- **Types.** The reference's loading check wants ``step`` to return a 5-tuple of
  ``str, float, bool, bool, dict``; spadegym also reads the old 4-tuple, numpy
  bools and ``None`` info. Returns are made strict, ``reset`` is called with its
  seed, and the module ``random`` is seeded from it as spadegym's runtime does.

The rewrite appends a short shim after the file's own code (which stays as it
was) and declares ``ACTION_FORMAT``, so spadegym plays the exported file the
reference's way too. Nothing here runs environment code.
"""

from __future__ import annotations

import ast

from .contract import PLAIN, TOOL_CALL
from .loader import prelude_import
from .reference import action_format, class_bases
from .static import env_class, parse

#: The comment that opens the appended shim (a rewritten file is recognised by it and not rewritten twice).
SHIM_MARK = "# --- spadegym export: played as the SPADE reference's loader and rollout play it ---"

_SHIM = '''

{mark}
ACTION_FORMAT = {format!r}


def _spadegym_for_reference(cls, plain, tools):
    """Bridge spadegym's runtime and the reference's (see spadegym.envfile.spade_export)."""
    import json
    import random
    import re

    reset, step = cls.reset, cls.step

    def strict(result):
        if isinstance(result, tuple) and len(result) == 4:
            result = (result[0], result[1], result[2], False, result[3])
        observation, reward, terminated, truncated, info = result
        return (str(observation), float(reward), bool(terminated), bool(truncated),
                info if isinstance(info, dict) else {{}})

    def bare(action):
        answer = re.search(r"<answer>(.*?)</answer>", action, re.DOTALL) if tools else None
        boxed = re.fullmatch(r"\\s*\\\\boxed\\{{(.*)\\}}\\s*", action, re.DOTALL)
        boxed = boxed or (re.search(r"\\\\boxed\\{{([^{{}}]+)\\}}", action) if tools else None)
        found = answer or boxed
        return found.group(1).strip() if found else action.strip()

    def reset_as_spadegym(self, seed=None, **kwargs):
        self.__dict__.pop("_spadegym_ending", None)
        if seed is not None:
            random.seed(seed)
        result = reset(self, seed=seed)
        observation, info = (result, {{}}) if isinstance(result, str) else result
        return str(observation), info if isinstance(info, dict) else {{}}

    def step_as_spadegym(self, action):
        if self.__dict__.get("_spadegym_in_tool"):  # a tool of the file's own that plays through its step
            return strict(step(self, action))
        ending = self.__dict__.pop("_spadegym_ending", None)
        if ending is not None:
            return ending
        return strict(step(self, bare(action) if plain else action))

    cls.reset, cls.step = reset_as_spadegym, step_as_spadegym
    if tools and plain:
        execute = cls.execute_tool

        def execute_as_reference(self, name, arguments):
            self._spadegym_in_tool = True
            try:
                result = execute(self, name, arguments)
            finally:
                self._spadegym_in_tool = False
            if isinstance(result, tuple) and len(result) in (4, 5) and isinstance(result[0], str):
                result = strict(result)
                if result[2] or result[3]:  # it ended the episode: the next reply ends it there
                    self._spadegym_ending = result
                return {{"output": result[0], "returncode": 0}}
            if isinstance(result, dict) and isinstance(result.get("output"), str):
                return result
            text = result if isinstance(result, str) else json.dumps(result, default=repr)
            return {{"output": text, "returncode": 0}}

        cls.execute_tool = execute_as_reference
        if callable(getattr(cls, "solution", None)):
            solution = cls.solution

            def solution_with_closing_reply(self):
                actions = solution(self)
                return [*actions, "<answer>done</answer>"] if isinstance(actions, list) else actions

            cls.solution = solution_with_closing_reply


_spadegym_for_reference({cls}, plain={plain}, tools={tools})
'''


def _bound_at_top(tree: ast.Module) -> set[str]:
    """Names the module binds at its top level (imports, definitions, assignments)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def missing_imports(tree: ast.Module) -> list[str]:
    """Import lines for the prelude names the file uses without binding them, in a stable order."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    lines = {prelude_import(name) for name in used - _bound_at_top(tree)}
    return sorted(line for line in lines if line)


def _insert_at(tree: ast.Module) -> int:
    """The line after the module docstring and ``from __future__`` imports (0: the top)."""
    line = 0
    for node in tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str) and node is tree.body[0]
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            break
        line = node.end_lineno or line
    return line


def for_reference(source: str, filename: str = "<env>") -> str:
    """``source`` rewritten to load and play under the reference as under spadegym (see the module doc).

    Raises ``SourceError`` for a file that does not parse or has no environment class.
    """
    if SHIM_MARK in source:
        return source
    tree = parse(source, filename)
    cls = env_class(tree)
    fmt = action_format(source, filename, tree)
    classes, provided = class_bases(tree, cls)
    tools = fmt == TOOL_CALL or bool(provided) or any(
        isinstance(item, ast.FunctionDef) and item.name == "get_tools" for node in classes for item in node.body)
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    imports = missing_imports(tree)
    if imports:
        at = _insert_at(tree)
        lines[at:at] = [*(f"{line}\n" for line in imports), "\n" if at else ""]
    shim = _SHIM.format(mark=SHIM_MARK, format=TOOL_CALL if tools else "boxed", cls=cls.name,
                        plain=fmt == PLAIN, tools=tools)
    return "".join(lines).rstrip("\n") + "\n" + shim


__all__ = ["SHIM_MARK", "for_reference", "missing_imports"]
