"""Loading rules: how an environment's source becomes a live instance.

Only the sandbox worker calls ``load_env_class``: environments are untrusted
and never execute in the host process. The rules match the SPADE reference
pools, so their files load unchanged: common standard-library names are
available without import, ``__init__`` may or may not accept ``max_turns``,
and the module-level ``random`` is seeded per reset by ``seed_globals``.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import heapq
import inspect
import itertools
import json
import math
import random
import re
import string
import types
import typing
from typing import Any

from .static import ENV_CLASS_SUFFIX, SourceError, find_env_class_name

# Names generated code often uses without importing them (seen in the reference pools).
_PRELUDE_MODULES = {
    "math": math, "random": random, "re": re, "json": json, "itertools": itertools,
    "collections": collections, "functools": functools, "heapq": heapq, "string": string,
    "dataclasses": dataclasses, "typing": typing,
}
_PRELUDE_NAMES: dict[str, Any] = {
    "deque": collections.deque, "Counter": collections.Counter,
    "defaultdict": collections.defaultdict, "OrderedDict": collections.OrderedDict,
    "namedtuple": collections.namedtuple,
    "dataclass": dataclasses.dataclass, "field": dataclasses.field,
    **{name: getattr(typing, name) for name in (
        "Any", "Dict", "List", "Optional", "Set", "Tuple", "Union", "Callable",
        "Iterable", "Sequence", "Mapping", "FrozenSet", "Deque", "DefaultDict",
    )},
}


def prelude() -> dict[str, Any]:
    """A fresh module namespace holding the names environments may use unimported."""
    return {**_PRELUDE_MODULES, **_PRELUDE_NAMES}


def load_env_class(source: str, filename: str = "<env>") -> type:
    """Execute ``source`` as a module and return its environment class.

    Raises SourceError for files that break the loading rules, and lets any
    exception of the module's own code propagate (the worker classifies it).
    """
    class_name = find_env_class_name(source, filename)
    module = types.ModuleType(f"spadegym_env_{class_name}")
    module.__dict__.update(prelude())
    module.__file__ = filename
    # dataclasses look their module up in sys.modules while processing a class.
    import sys

    sys.modules[module.__name__] = module
    code = compile(source, filename, "exec")
    exec(code, module.__dict__)  # noqa: S102 - only ever inside the sandbox worker
    cls = module.__dict__.get(class_name)
    if not isinstance(cls, type):
        raise SourceError(f"{class_name} is not a class after running the file; do not rebind its name.")
    return cls


def instantiate(cls: type, max_turns: int | None = None) -> Any:
    """Create the environment, passing ``max_turns`` only if ``__init__`` takes it."""
    if max_turns is not None:
        try:
            params = inspect.signature(cls).parameters
        except (TypeError, ValueError):
            params = {}
        if "max_turns" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return cls(max_turns=max_turns)
    return cls()


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
    "ENV_CLASS_SUFFIX", "declared_max_turns", "instantiate", "load_env_class",
    "prelude", "read_hint", "seed_globals",
]
