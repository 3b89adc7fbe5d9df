"""Where ``eval`` reads the agent's text (host-side, from the source alone).

``eval`` of an environment's own strings (an expression it built from its
random numbers) is harmless: the sandbox contains whatever the file does, and
the SPADE reference lints nothing. ``eval`` of the agent's action is refused all
the same, for what it does to the game rather than to the machine: the reply
runs as code with the environment's state in scope (``self.answer`` wins any
question), and an exported file would run it inside the reference's trainer,
which has no sandbox. This module finds the second kind.

A value is the agent's when it comes from ``step``'s action parameter: through
local assignments (``found = re.search(..., action)``, ``found.group(1)``),
through attributes ``step`` stores (``self.last = action``), or as the
argument of a helper whose ``eval`` reads its own parameter
(``self._calc(action)``). One level of helper is followed, which is what
generated files write; the sandbox still contains the rest.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _names(node: ast.AST) -> set[str]:
    """Local names and ``self.<attr>`` attributes (as ``"self.attr"``) an expression reads."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
            found.add(f"self.{sub.attr}")
    return found


def _targets(node: ast.AST) -> Iterable[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs of the assignments in a function (loops and ``with`` bind too)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign):
            yield from ((t, sub.value) for t in sub.targets)
        elif (
            isinstance(sub, (ast.AnnAssign, ast.AugAssign))
            and sub.value is not None
            or isinstance(sub, ast.NamedExpr)
        ):
            yield sub.target, sub.value
        elif isinstance(sub, (ast.For, ast.AsyncFor, ast.comprehension)):
            yield sub.target, sub.iter
        elif isinstance(sub, (ast.With, ast.AsyncWith)):
            yield from ((i.optional_vars, i.context_expr) for i in sub.items if i.optional_vars is not None)


def _spread(function: ast.AST, tainted: set[str]) -> set[str]:
    """Every name and self attribute an assignment in ``function`` derives from ``tainted`` (to a fixpoint)."""
    tainted = set(tainted)
    pairs = list(_targets(function))
    changed = True
    while changed:
        changed = False
        for target, value in pairs:
            if _names(value) & tainted:
                new = {n for n in _names(target) if n != "self"} - tainted
                if new:
                    tainted |= new
                    changed = True
    return tainted


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = function.args
    return [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]


def _evals(function: ast.AST) -> list[ast.Call]:
    return [
        c
        for c in ast.walk(function)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "eval"
    ]


def _reads(call: ast.Call, tainted: set[str]) -> bool:
    return any(_names(arg) & tainted for arg in [*call.args, *(k.value for k in call.keywords)])


def _callee(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def eval_of_action(tree: ast.Module) -> int | None:
    """The line of an ``eval`` that reads the agent's action (see the module docstring), else None."""
    functions = {f.name: f for f in ast.walk(tree) if isinstance(f, _FUNCTIONS)}
    # Helpers whose eval reads one of their own parameters: calling one with the action evaluates it.
    evaluators = set()
    for name, function in functions.items():
        own = _spread(function, {p for p in _params(function) if p not in ("self", "cls")})
        if any(_reads(call, own) for call in _evals(function)):
            evaluators.add(name)
    step = functions.get("step")
    if step is None or len(_params(step)) < 2:
        return None
    tainted = _spread(step, {_params(step)[1]})
    stored = {n for n in tainted if n.startswith("self.")}
    for function in functions.values():  # what step stores, any method may evaluate later
        reach = _spread(function, tainted if function is step else stored)
        for call in ast.walk(function):
            if not isinstance(call, ast.Call) or not _reads(call, reach):
                continue
            if isinstance(call.func, ast.Name) and call.func.id == "eval":
                return call.lineno
            if _callee(call) in evaluators:
                return call.lineno
    return None
