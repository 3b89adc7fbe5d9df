"""Static section: rules read from the source without running it (host-safe).

A lint with clear messages, not a security boundary: the sandbox contains
whatever slips through. It refuses only code that would really run: imports
and names in a file's ``if __name__ == "__main__":`` demo never run when the
environment is loaded (``live_code``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..envfile.bases import provided_methods
from ..envfile.contract import ACTION_FORMATS, PLAIN
from ..envfile.loader import PROVIDED_MODULES
from ..envfile.reference import (
    ACTION_FORMAT_NAME,
    ACTION_RULES,
    action_format,
    class_bases,
    declared_action_format,
)
from ..envfile.static import SourceError, env_class, env_class_nodes, parse
from .config import ValidationConfig
from .eval_taint import eval_of_action
from .verdict import STATIC, Check, failed, passed

# Builtins and attributes an environment never needs: dynamic code, files,
# console input, and the usual ways out of a restricted namespace.
FORBIDDEN_NAMES = frozenset({"__import__", "eval", "exec", "compile", "open", "input", "breakpoint",
                             "globals", "__builtins__"})
FORBIDDEN_ATTRIBUTES = frozenset({"__subclasses__", "__globals__", "__builtins__", "__code__",
                                  "__bases__", "__mro__", "f_globals", "f_back", "gi_frame"})


def static_checks(source: str, filename: str, config: ValidationConfig) -> list[Check]:
    """Run the static section; stops at the first check that makes the rest meaningless."""
    return static_section(source, filename, config)[0]


def static_section(source: str, filename: str, config: ValidationConfig) -> tuple[list[Check], ast.Module | None]:
    """``static_checks``, and the parsed file (None when it does not parse) for the probes to read."""
    checks: list[Check] = []
    size = len(source.encode("utf-8", errors="replace"))
    if size > config.max_source_bytes:
        return [failed("source_size", f"The file is {size} bytes, above the {config.max_source_bytes}-byte "
                       "limit: shorten it (remove unused code, long tables and comments).", STATIC)], None
    checks.append(passed("source_size"))
    try:
        tree = parse(source, filename)
    except SourceError as exc:
        return [*checks, failed("parses", str(exc), STATIC)], None
    checks.append(passed("parses"))
    return _class_checks(checks, source, filename, tree, config), tree


def _class_checks(checks: list[Check], source: str, filename: str, tree: ast.Module,
                  config: ValidationConfig) -> list[Check]:
    try:
        cls = env_class(tree)
    except SourceError as exc:
        return [*checks, failed("one_env_class", str(exc), STATIC)]
    class_name = cls.name
    declared = declared_action_format(tree, cls)
    fmt = action_format(source, filename, tree) if declared is None or declared in ACTION_FORMATS else None
    checks.append(_one_env_class(tree, fmt))
    if checks[-1].blocking:
        return checks
    methods = _methods(tree, cls)
    checks += [_defines(methods, class_name, "reset", "def reset(self, seed=None)",
                        "returning (observation, info)"),
               _defines(methods, class_name, "step", "def step(self, action)",
                        "returning (observation, reward, terminated, truncated, info)")]
    if "reset" in methods:
        checks.append(_reset_takes_seed(methods["reset"]))
    if "step" in methods:
        checks.append(_step_takes_action(methods["step"]))
    live = live_code(tree)
    nodes = list(ast.walk(live))  # walked once, read by both lints below (in order: the first offence is reported)
    checks.append(_imports_allowed(nodes, config.allowed_imports))
    checks.append(_no_forbidden_names(live, nodes))
    checks.append(_action_format_known(declared, fmt))
    return checks


def _one_env_class(tree: ast.Module, fmt: str | None) -> Check:
    """One class ending in Env (spadegym's rule); in a file in the reference's conventions, the first."""
    classes = env_class_nodes(tree)
    if len(classes) == 1:
        return passed("one_env_class")
    names = ", ".join(c.name for c in classes)
    if fmt is not None and fmt != PLAIN:
        return passed("one_env_class", f"reference rule: {classes[0].name}, the first of the classes ending in "
                      f"'Env' ({names}), is the environment, as the reference's loader takes the first.")
    return failed("one_env_class", f"Several environment classes found ({names}): keep exactly one top-level "
                  "class ending in 'Env' (spadegym's rule for its own files; a file in the reference's "
                  "conventions, boxed or tool_call, gets the first).", STATIC)


def _methods(tree: ast.Module, cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Methods of the environment class, including those of its bases: in the file, or provided by the
    runtime (however the file names the provided base)."""
    classes, provided = class_bases(tree, cls)
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in classes:
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(item.name, item)
    for name in provided:
        found.update({m: _PROVIDED for m in provided_methods(name) if m not in found})
    return found


# Stands for a method of a provided base class (no source to point at).
_PROVIDED = ast.parse("def provided(self, seed=None, action=None): pass").body[0]


def _defines(methods: dict, class_name: str, name: str, signature: str, returns: str) -> Check:
    check = f"defines_{name}"
    if name in methods:
        return passed(check)
    return failed(check, f"{class_name} defines no {name}() method: add `{signature}` {returns}.", STATIC)


def _reset_takes_seed(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Check:
    args = fn.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if "seed" in names or args.kwarg is not None:
        return passed("reset_takes_seed")
    return failed("reset_takes_seed", f"reset() at line {fn.lineno} has no `seed` parameter, but the runtime "
                  "calls reset(seed=...): declare it as `def reset(self, seed=None)` and build the "
                  "instance from that seed.", STATIC)


def _step_takes_action(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Check:
    args = fn.args
    if len(args.posonlyargs + args.args) >= 2 or args.vararg is not None:
        return passed("step_takes_action")
    return failed("step_takes_action", f"step() at line {fn.lineno} takes no action argument: declare it as "
                  "`def step(self, action)` where action is the agent's answer as a string.", STATIC)


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round): false when a loader runs the file as a module."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, *test.comparators]
    return any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides) and \
        any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides)


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` / ``typing.TYPE_CHECKING``: false at run time."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def live_code(tree: ast.Module) -> ast.Module:
    """The module without the top-level blocks that never run when an environment is loaded: the
    ``if __name__ == "__main__":`` demo (the loader runs the file under another name) and
    ``if TYPE_CHECKING:`` imports. Their ``else`` branches run, and stay."""
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.If) and (_is_main_guard(node.test) or _is_type_checking(node.test)):
            body += node.orelse
        else:
            body.append(node)
    return ast.Module(body=body, type_ignores=[])


def _imported_modules(nodes: list[ast.AST]) -> Iterator[tuple[str, int]]:
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative imports have no package to come from
                yield "." * node.level + (node.module or ""), node.lineno
            elif node.module:
                yield node.module, node.lineno


def _numpy_names(nodes: list[ast.AST]) -> Iterator[tuple[str, int]]:
    """``np`` / ``numpy`` used without import: the reference injects them, so they count as importing numpy."""
    bound = {alias.asname or alias.name.split(".")[0] for node in nodes
             if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in ("np", "numpy") and node.id not in bound:
            yield "numpy", node.lineno
            return


def _imports_allowed(nodes: list[ast.AST], allowed: list[str]) -> Check:
    """``nodes``: the live code's nodes (``ast.walk``)."""
    allow = set(allowed) | set(PROVIDED_MODULES)
    for module, line in [*_imported_modules(nodes), *_numpy_names(nodes)]:
        if module == "numpy" and module not in allow:
            return failed("imports_allowed", f"Line {line} uses numpy, which is not an allowed import here: "
                          "use the standard library (math, statistics, random), or allow it with "
                          "--allow-import numpy (validation.allowed_imports).", STATIC)
        if module.split(".")[0] not in allow:
            sample = ", ".join(m for m in ("math", "random", "re", "itertools", "collections") if m in allow)
            return failed("imports_allowed", f"Line {line} imports '{module}', which environments may not use: "
                          f"keep to pure-computation standard-library modules ({sample}, ...) and remove "
                          "that import.", STATIC)
    return passed("imports_allowed")


def _no_forbidden_names(tree: ast.Module, nodes: list[ast.AST]) -> Check:
    """Forbidden builtins and internals; ``eval(...)`` is allowed except on the agent's action
    (``eval_taint``: the sandbox contains the file, but a reply run as code can read the answer).
    ``nodes``: ``tree``'s nodes (``ast.walk``)."""
    calls = {id(n.func) for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "eval"}
    # Without a call of eval there is none of the action (eval_of_action finds only calls of eval, or
    # of a helper that calls it): the taint analysis, which walks every function, is skipped.
    line = eval_of_action(tree) if calls else None
    if line is not None:
        return failed("no_forbidden_names", f"Line {line} evaluates the agent's action with `eval`, so a reply runs "
                      "as code with the environment's state in scope (it can read the answer): parse the reply "
                      "instead (int(), float(), a small arithmetic parser over ast).", STATIC)
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES and id(node) not in calls:
            return failed("no_forbidden_names", f"Line {node.lineno} uses `{node.id}`, which environments may "
                          "not use (no dynamic code, files or console input): keep all logic and state in "
                          "plain Python inside the class.", STATIC)
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            return failed("no_forbidden_names", f"Line {node.lineno} reaches the interpreter internal "
                          f"`.{node.attr}`: environments must not introspect the runtime; remove it.", STATIC)
    return passed("no_forbidden_names")


def _action_format_known(declared: str | None, fmt: str | None) -> Check:
    if fmt is not None:  # a reference-style file's verdict says its rule; spadegym's own files say nothing, as before
        return passed("action_format_known", ACTION_RULES[fmt] if fmt != PLAIN else "")
    return failed("action_format_known", f"{ACTION_FORMAT_NAME} = {declared!r} is not an action format: use one "
                  f"of {', '.join(map(repr, ACTION_FORMATS))} (or remove it to let spadegym detect it).", STATIC)
