"""Loading rules: how an environment's source becomes a live instance.

Only the sandbox worker calls ``load_env_class``: environments are untrusted
and never execute in the host process. The rules match the SPADE reference's
loader, so its files load unchanged: the standard-library names it injects
are available without import (``prelude``), as are its tool-use base class
(``bases.ToolUseBaseEnv``), ``math_verify`` (the math-verify package, a dependency) and,
when the file uses them, ``np`` / ``numpy``; the class is built with ``cls()``,
or ``cls(max_turns=...)`` when its ``__init__`` requires that; and the
module-level ``random`` is seeded per reset by ``seed_globals``.
"""

from __future__ import annotations

import ast
import collections
import copy
import dataclasses
import functools
import heapq
import importlib
import inspect
import itertools
import json
import math
import operator
import random
import re
import statistics
import string
import sys
import types
import typing
from typing import Any

from .bases import PROVIDED_CLASSES
from .static import ENV_CLASS_SUFFIX, SourceError, env_class, parse

# Names generated code uses without importing them (those the SPADE reference injects, and a few more).
_PRELUDE_MODULES = {
    "math": math, "random": random, "re": re, "json": json, "itertools": itertools,
    "collections": collections, "functools": functools, "heapq": heapq, "string": string,
    "dataclasses": dataclasses, "typing": typing, "copy": copy, "operator": operator,
    "statistics": statistics,
}
#: Names of the prelude's modules that environments may use unimported, by the module they come from.
_PRELUDE_FROM: dict[str, tuple[str, ...]] = {
    "collections": ("deque", "Counter", "defaultdict", "OrderedDict", "namedtuple"),
    "dataclasses": ("dataclass", "field"),
    "copy": ("deepcopy",),
    "functools": ("reduce", "lru_cache"),
    "heapq": ("heappush", "heappop"),
    "itertools": ("combinations", "permutations", "product", "chain", "accumulate"),
    "typing": ("Any", "Dict", "List", "Optional", "Set", "Tuple", "Union", "Callable", "Iterable", "Sequence",
               "Mapping", "FrozenSet", "Deque", "DefaultDict"),
}
_PRELUDE_NAMES: dict[str, Any] = {
    **{name: getattr(_PRELUDE_MODULES[module], name) for module, names in _PRELUDE_FROM.items() for name in names},
    **PROVIDED_CLASSES,
}
#: Modules environment files may import beyond the allowed standard library: the math-verify package
#: (a dependency) and the reference's tool-use base module (``bases``).
PROVIDED_MODULES = ("math_verify", "tool_use_base_env")
#: The turn budget passed to a class whose ``__init__`` requires ``max_turns`` (the runner's default).
DEFAULT_MAX_TURNS = 25
_NUMPY_NAMES = ("np", "numpy")


def prelude() -> dict[str, Any]:
    """A fresh module namespace holding the names environments may use unimported."""
    return {**_PRELUDE_MODULES, **_PRELUDE_NAMES}


def prelude_import(name: str) -> str | None:
    """The import statement that binds a prelude name as the prelude does (``import math``, ``from
    collections import deque``); None for names that are not the prelude's, or a provided class."""
    if name in _PRELUDE_MODULES:
        return f"import {name}"
    module = next((m for m, names in _PRELUDE_FROM.items() if name in names), None)
    return f"from {module} import {name}" if module else None


def _provide_modules(source: str, namespace: dict[str, Any]) -> None:
    """Register the provided modules a file imports, and numpy names it uses unimported."""
    if "tool_use_base_env" in source:
        shim = types.ModuleType("tool_use_base_env")
        shim.__dict__.update(PROVIDED_CLASSES)
        sys.modules.setdefault("tool_use_base_env", shim)
    # The substring test first: far cheaper than the word search, and most files hold neither name.
    if any(name in source for name in _NUMPY_NAMES) and any(re.search(rf"\b{name}\b", source) for name in _NUMPY_NAMES):
        try:  # only allowed files get here using numpy (the static checks refuse it otherwise)
            numpy = importlib.import_module("numpy")
        except ImportError:
            return
        namespace.setdefault("np", numpy)
        namespace.setdefault("numpy", numpy)


def compile_env(tree: ast.Module | str, filename: str) -> types.CodeType:
    """The module code of a file, parsed or as text (the same code either way; compiling runs none of it),
    with this module's compiler flags."""
    return compile(tree, filename, "exec")


def load_env_class(source: str, filename: str = "<env>", tree: ast.Module | None = None,
                   compiled: tuple[str, types.CodeType] | None = None) -> type:
    """Execute ``source`` as a module and return its environment class.

    Raises SourceError for files that break the loading rules, and lets any
    exception of the module's own code propagate (the worker classifies it).
    ``tree``: the file already parsed (``static.parse``), compiled instead of parsing it again;
    ``compiled``: its class name and ``compile_env`` code, both read from ``source`` already.
    """
    if compiled is None:
        tree = tree or parse(source, filename)
        class_name = env_class(tree).name
    else:
        class_name = compiled[0]
    module = types.ModuleType(f"spadegym_env_{class_name}")
    module.__dict__.update(prelude())
    _provide_modules(source, module.__dict__)
    module.__file__ = filename
    # dataclasses look their module up in sys.modules while processing a class.
    sys.modules[module.__name__] = module
    code = compile_env(tree, filename) if compiled is None else compiled[1]  # type: ignore[arg-type]
    exec(code, module.__dict__)  # noqa: S102 - only ever inside the sandbox worker
    cls = module.__dict__.get(class_name)
    if not isinstance(cls, type):
        raise SourceError(f"{class_name} is not a class after running the file; do not rebind its name.")
    return cls


def instantiate(cls: type, max_turns: int | None = None) -> Any:
    """Create the environment as the reference does, keeping the file's own turn budget.

    With ``max_turns`` given: ``cls(max_turns=max_turns)``, falling back to
    ``cls()`` when ``__init__`` does not take it. Without: ``cls()``, falling
    back to ``cls(max_turns=DEFAULT_MAX_TURNS)`` when ``__init__`` requires it
    (the reference's ``respect_game_max_turns`` order).
    """
    if max_turns is not None:
        try:
            return cls(max_turns=max_turns)
        except TypeError:
            if _takes_max_turns(cls):
                raise
            return cls()
    try:
        return cls()
    except TypeError:
        if not _requires_max_turns(cls):
            raise
    return cls(max_turns=DEFAULT_MAX_TURNS)


def _parameters(cls: type) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return {}


def _takes_max_turns(cls: type) -> bool:
    params = _parameters(cls)
    return "max_turns" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _requires_max_turns(cls: type) -> bool:
    param = _parameters(cls).get("max_turns")
    return param is not None and param.default is param.empty


def seed_globals(seed: int | None) -> None:
    """Seed the module-level ``random`` before reset, so such environments stay deterministic."""
    random.seed(seed)


def declared_max_turns(env: Any) -> int | None:
    """The environment's own turn budget, when it declares a usable one."""
    value = getattr(env, "max_turns", None)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def read_hint(env: Any) -> str | None:
    """The environment's privileged hint: a class attribute or a method, else None."""
    hint = getattr(env, "hint", None)
    if callable(hint):
        hint = hint()
    if hint is None:
        return None
    return str(hint)


__all__ = [
    "DEFAULT_MAX_TURNS", "ENV_CLASS_SUFFIX", "PROVIDED_MODULES", "compile_env", "declared_max_turns", "instantiate",
    "load_env_class", "prelude", "prelude_import", "read_hint", "seed_globals",
]
