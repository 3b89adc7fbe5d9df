"""Specs: ``kind[:argument]`` parsed once into a typed value, and one registry shape for every role.

    spec = AGENTS.parse("openai:qwen3@http://127.0.0.1:8000/v1")   # Spec("openai", "qwen3@http://...")
    agent = AGENTS.make(spec, seed=0, temperature=0.6)               # options checked against the kind's model

A role (agents, designers, designer rewards, level sources) is a ``Registry``
of ``Kind``s. A kind names its spec form, whether it takes an argument, the
options it accepts (a pydantic model, so a misspelt or foreign option is one
sentence), the sections of a run's configuration it reads, and how it is
built. A spec naming your own object (``package.module:Name``) is of kind
``import``. Downstream code reads ``spec.kind``; it never tests the text again.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import UserError
from .plugins import is_import_path

T = TypeVar("T")

#: The kind of a spec that names your own object: ``package.module:Name``.
IMPORT = "import"

#: Every role's spec forms, each with what it names: the one list of them. A role's ``Registry`` takes its kinds'
#: forms from here (and refuses a kind this does not list, or a listed kind it lacks); the command line's help and
#: the run config's descriptions read it here (``spec_help``), without importing any registry.
FORMS: dict[str, dict[str, tuple[str, str]]] = {
    "agent": {
        "random": ("random", ""),
        "human": ("human", "you, at the terminal"),
        "scripted": ("scripted:FILE", "actions, one a line"),
        "learner": ("learner[:DIR]", "the built-in learner; DIR: a saved learner, frozen, or a run directory: "
                                     "its last checkpoint"),
        "openai": ("openai:MODEL[@BASE_URL]", ""),
        "hf": ("hf:PATH", "a local model that trains; the designer's path = shared weights"),
        IMPORT: ("package.module:Class", "your own"),
    },
    "designer": {
        "mutation": ("mutation", ""),
        "openai": ("openai:MODEL[@BASE_URL]", ""),
        "hf": ("hf:PATH", "a local model that trains"),
        "uniform": ("uniform", "baseline"),
        "fixed": ("fixed:easy|all", "baseline"),
        "staged": ("staged", "baseline"),
        "pool": ("pool", "the files of --pool alone"),
        IMPORT: ("package.module:Class", "your own"),
    },
    "designer_reward": {
        "blend": ("blend", "default"),
        **{name: (name, "") for name in ("regret", "regret_floored", "band", "learning_potential", "learnability",
                                         "oracle_regret", "failure")},
        IMPORT: ("package.module:function", "your own"),
    },
    "source": {
        "reasoning-gym": ("reasoning-gym:TASK", ""),
        "openenv": ("openenv:URL", ""),
        "pool": ("a pool directory or file", ""),
    },
}


def written_kind(text: str) -> str:
    """The kind a spec's text is written with: the text before its first ':' ('' without one), ``openai:m@u`` ->
    ``openai``. For text that no registry may read where it is (a store's old config); everything else parses."""
    name, sep, _ = str(text).strip().partition(":")
    return name if sep else ""


def form(role: str, kind: str) -> str:
    """How a kind of ``role`` is written: ``form("agent", "openai")`` -> ``openai:MODEL[@BASE_URL]``."""
    return FORMS[role][kind][0]


def spec_help(role: str) -> str:
    """A role's spec forms as help shows them: ``random | human (you, at the terminal) | ...``."""
    return " | ".join(f"{written} ({note})" if note else written for written, note in FORMS[role].values())


@dataclass(frozen=True)
class Spec:
    """A spec as parsed: its kind and its argument (``openai:MODEL@URL`` -> ``openai``, ``MODEL@URL``)."""

    kind: str
    argument: str = ""
    bare: bool = False  # written without its kind's prefix (a pool's path, your own package.module:Name)

    @property
    def text(self) -> str:
        """The spec as written."""
        if self.bare or self.kind == IMPORT or not self.kind:
            return self.argument
        return f"{self.kind}:{self.argument}" if self.argument else self.kind

    def __str__(self) -> str:
        return self.text


#: The kinds whose argument may name the server of its model after an ``@`` (``openai:MODEL@URL``).
SERVED = ("openai",)


def without_host(spec: Spec) -> Spec:
    """The spec without the server it names (``openai:MODEL@URL`` -> ``openai:MODEL``): where a model is served
    may change between a search and its resumption, the kind and the model may not."""
    return Spec(spec.kind, spec.argument.partition("@")[0], spec.bare) if spec.kind in SERVED else spec


class AgentSpecError(UserError, ValueError):
    """An agent spec or option that cannot be used (the message is one sentence). Here, below the agents'
    registry and the store (``learner:RUN``), so both raise it without one importing the other."""


class NoOptions(BaseModel):
    """The options of a kind that takes none."""

    model_config = {"extra": "forbid"}


@dataclass(frozen=True)
class Kind(Generic[T]):
    """One kind of a role: how it is written, what it accepts, what a run's config gives it, how it is built."""

    name: str
    form: str  # as help and errors show it: "openai:MODEL[@BASE_URL]"
    build: Callable[[Spec, int, Any], T] | None  # (spec, seed, validated options) -> the part; None: its role builds it
    #: What ``make`` accepts for it: a model, or a function returning one (a kind whose model is costly to import).
    options: Any = NoOptions
    argument: str = "none"  # none | optional | required
    needs: str = "an argument"  # what the argument is, as a missing one is named: "a model", "a file"
    arguments: tuple[str, ...] = ()  # the only arguments it takes, when a fixed list (fixed:easy|all)
    #: The sections of a run's (or a search's) config it reads; a section no kind of the run reads is refused.
    sections: tuple[str, ...] = ()
    #: The options a run's config gives it (from those sections).
    from_config: Callable[[Any], dict[str, Any]] = field(default=lambda config: {})

    def options_model(self) -> type[BaseModel]:
        return self.options if isinstance(self.options, type) else self.options()

    def takes(self, option: str) -> bool:
        """Whether it declares ``option`` (your own class, which takes what it takes, declares none)."""
        return option in self.options_model().model_fields


class Registry(Generic[T]):
    """The kinds of one role: parses specs, checks options, builds parts; every error is one sentence."""

    def __init__(self, role: str, kinds: Sequence[Kind[T]], error: type[Exception] = UserError,
                 imports: Kind[T] | None = None, default_kind: str | None = None):
        self.role, self.error = role, error
        listed = FORMS.get(role)
        if listed is not None:  # its kinds are the ones the list of forms names, in its forms
            named = {k.name: k.form for k in kinds} | ({IMPORT: imports.form} if imports else {})
            assert named == {name: written for name, (written, _) in listed.items()}, \
                f"the {role} kinds and specs.FORMS['{role}'] differ: {named}"
        self.kinds = {k.name: k for k in kinds}
        self.imports = imports  # how ``package.module:Name`` is built (None: the role takes none)
        self.default_kind = default_kind  # the kind of a spec without a known prefix (a pool path)

    def forms(self) -> list[str]:
        return [k.form for k in self.kinds.values()] + ([self.imports.form] if self.imports else [])

    def parse(self, text: str | Spec) -> Spec:
        """The spec ``text`` names, checked against the kinds (an unknown one names the nearest)."""
        if isinstance(text, Spec):
            return text
        written = str(text).strip()
        if self.imports is not None and is_import_path(written):
            return Spec(IMPORT, written)
        name, sep, argument = written.partition(":")
        kind = self.kinds.get(name) if name != self.default_kind else None  # the default kind has no prefix
        if kind is None and self.default_kind is not None:
            prefixed = [k for k in self.kinds if k != self.default_kind]
            near = difflib.get_close_matches(name, prefixed, n=1, cutoff=0.75) if sep else []
            if near:
                raise self.error(f"unknown {self.role} kind '{name}:'; did you mean '{self.kinds[near[0]].form}'?")
            return Spec(self.default_kind, written, bare=True)
        if kind is None:
            near = difflib.get_close_matches(name, list(self.kinds), n=1, cutoff=0.5)
            tip = f"did you mean '{self.kinds[near[0]].form}'? " if near else ""
            raise self.error(f"unknown {self.role} '{written}'; {tip}known {self.role}s: {', '.join(self.forms())}.")
        argument = argument.strip()
        if kind.argument == "none" and (sep or argument):
            raise self.error(f"{self.role} '{name}' takes no argument (got '{written}'); write just '{name}'.")
        if kind.argument == "required" and not argument:
            raise self.error(f"{self.role} '{name}' needs {kind.needs}: write {kind.form}.")
        if kind.arguments and argument not in kind.arguments:
            near = difflib.get_close_matches(argument, kind.arguments, n=1, cutoff=0.5)
            tip = f"did you mean '{name}:{near[0]}'?" if near else f"write {kind.form}."
            raise self.error(f"unknown {self.role} '{written}'; {tip}")
        return Spec(name, argument)

    def kind(self, spec: str | Spec) -> Kind[T]:
        spec = self.parse(spec)
        if spec.kind == IMPORT:
            assert self.imports is not None
            return self.imports
        return self.kinds[spec.kind]

    def options(self, spec: str | Spec, options: dict[str, Any]) -> Any:
        """``options`` checked against what the kind of ``spec`` accepts (its options model)."""
        spec = self.parse(spec)
        model = self.kind(spec).options_model()
        try:
            return model.model_validate(options)
        except ValidationError as exc:
            raise self.error(option_error(f"{self.role} '{spec}'", exc, model)) from None

    def make(self, spec: str | Spec, seed: int = 0, **options: Any) -> T:
        """The part ``spec`` names, built with ``options`` (each checked against the kind's model)."""
        spec = self.parse(spec)
        build = self.kind(spec).build
        assert build is not None, f"{self.role} kinds are built by their role's own code"
        return build(spec, seed, self.options(spec, options))

    def from_config(self, spec: str | Spec, config: Any) -> dict[str, Any]:
        """The options a run's config gives the kind of ``spec``."""
        return self.kind(spec).from_config(config)


def from_sections(**options: str) -> Callable[[Any], dict[str, Any]]:
    """A kind's ``from_config``: each option is the config's section of that name (a config without it gives none)."""
    def pick(config: Any) -> dict[str, Any]:
        return {option: getattr(config, section) for option, section in options.items()
                if getattr(config, section, None) is not None}

    return pick


def option_error(subject: str, exc: ValidationError, model: type[BaseModel]) -> str:
    """One sentence for the first problem of ``exc``: a misspelt or foreign option names the nearest known one."""
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    known = [name for name in model.model_fields]
    if error["type"] == "extra_forbidden":
        if not known:
            return f"{subject} takes no options (got '{where}')."
        near = difflib.get_close_matches(str(error["loc"][-1]), known, n=1)
        tip = f"did you mean '{near[0]}'?" if near else f"it takes {', '.join(known)}."
        return f"{subject} has no option '{where}'; {tip}"
    message = str(error["msg"]).removeprefix("Value error, ").rstrip(".")
    return f"{subject} option '{where}' is invalid: {message}."


def near_name(name: str, names: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest of ``names``, else nothing."""
    near = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean '{near[0]}'?)" if near else ""
