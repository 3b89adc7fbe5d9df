"""The configuration reference: every setting of the config models, from the models' own field descriptions.

    python -m spadegym.reference docs/configuration.md          # write it
    python -m spadegym.reference docs/configuration.md --check  # exit 1 when the file is out of step

The same walk over the models prints ``spadegym run --print-config --describe``
(each setting with its effective value and description), so the page, the
command and the models cannot say different things.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from .specs import Spec


@dataclass(frozen=True)
class Setting:
    """One field of a config model: its dotted key, type, default (as JSON text) and description."""

    key: str
    type: str
    default: str
    description: str


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The config models a field's type holds (``X``, ``X | None``, ``list[X]``, a union of models)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += [m for m in _models_in(arg) if m not in found]
    return found


def _type_text(annotation: Any) -> str:
    if annotation is Spec:  # written as text, parsed by its role's registry
        return "str"
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_text(a) for a in args)
    if origin is typing.Annotated:
        return _type_text(args[0])
    name = getattr(origin, "__name__", str(origin))
    return f"{name}[{', '.join(_type_text(a) for a in args)}]" if args else name


_REQUIRED = object()


def _default(field: Any) -> Any:
    if field.default is not PydanticUndefined:
        return field.default
    if field.default_factory is not None:
        return field.default_factory()
    return _REQUIRED


def settings(model: type[BaseModel], prefix: str = "", defaults: BaseModel | None = None) -> list[Setting]:
    """The fields of ``model`` that hold values (a field holding a config model is a section, see
    ``sections``); ``defaults``: the section's default value where its parent sets other defaults."""
    rows = []
    for name, field in model.model_fields.items():
        if _models_in(field.annotation):
            continue
        value = getattr(defaults, name) if defaults is not None else _default(field)
        default = "required" if value is _REQUIRED else json.dumps(value, default=str)
        rows.append(Setting(f"{prefix}{name}", _type_text(field.annotation), default,
                            " ".join((field.description or "").split())))
    return rows


@dataclass(frozen=True)
class Section:
    """A field whose value is a config model (``[key]``) or a list of them (``[[key]]``)."""

    key: str
    listed: bool
    description: str
    model: type[BaseModel]
    defaults: BaseModel | None  # the value the parent gives it (None for a table array)

    @property
    def title(self) -> str:
        return f"[[{self.key}]]" if self.listed else f"[{self.key}]"

    @property
    def prefix(self) -> str:
        """Keys inside a table array are written in each of its tables, so they take no prefix."""
        return "" if self.listed else f"{self.key}."


def sections(model: type[BaseModel], prefix: str = "", defaults: BaseModel | None = None) -> list[Section]:
    """Every section below ``model``, depth first, each with the defaults its parent gives it."""
    found = []
    for name, field in model.model_fields.items():
        listed = typing.get_origin(field.annotation) is list
        kinds = _models_in(field.annotation)
        for nested in kinds:
            value = getattr(defaults, name) if defaults is not None else _default(field)
            value = value if isinstance(value, nested) else None
            lead = nested.__doc__ if len(kinds) > 1 else field.description  # a section of several kinds: each its own
            found.append(Section(f"{prefix}{name}", listed, " ".join((lead or "").split()), nested, value))
            if not listed:
                found += sections(nested, f"{prefix}{name}.", value)
    return found


def _table(rows: list[Setting]) -> list[str]:
    lines = ["| setting | type | default | description |", "|---|---|---|---|"]
    for row in rows:
        description = row.description.replace("|", "\\|").replace("<", "&lt;")
        lines.append(f"| `{row.key}` | {row.type} | `{row.default}` | {description} |")
    return lines


def _section(title: str, lead: str, rows: list[Setting]) -> list[str]:
    return [f"### {title}", "", *([lead, ""] if lead else []), *_table(rows), ""]


#: The commands whose configuration is documented, with their model's import path.
COMMANDS = (
    ("spadegym run", "spadegym.loop.config", "RunConfig"),
    ("spadegym redteam", "spadegym.redteam.config", "RedTeamConfig"),
)

HEADER = """# Configuration reference

<!-- Generated by `python -m spadegym.reference docs/configuration.md` from the config models' field
descriptions; edit the models, not this page (a test fails when the two differ). -->

Every setting below can be written in a TOML, YAML or JSON file passed with `--config FILE`, or set
on the command line with `--set key=value` (repeatable; a value is read as JSON when it parses, so
`--set skills='["Logical Deduction"]'` gives a list). Sections are tables in TOML (`[buffer]`),
their keys dotted on the command line (`--set buffer.capacity=128`). A misspelt or out-of-range
key stops the command at start with one sentence naming it and the nearest known name; so does a
setting that no part of the command reads (`learner.*` with an `openai:` agent, `mutation.*` with an
LLM designer, `hint` on a `reasoning-gym:` source), naming the parts that would read it.
`spadegym run --print-config` prints the effective values as JSON, and `--print-config --describe`
prints each setting with its value and description as a TOML file that `--config` loads (an unset
setting commented out).
"""


def reference() -> str:
    """The whole page, as Markdown."""
    import importlib

    out = [HEADER]
    written: dict[tuple[str, tuple[Setting, ...]], str] = {}  # a section another command already shows
    for command, module, name in COMMANDS:
        model = getattr(importlib.import_module(module), name)
        doc = " ".join((model.__doc__ or "").split())
        out += [f"## `{command}` ({name})", "", doc, ""]
        out += _section("top level", "", settings(model))
        for section in sections(model):
            rows = settings(section.model, section.prefix, section.defaults)
            kind = f" ({section.model.__name__})" if section.listed else ""
            title = f"`{section.title}`{kind}"
            seen = written.get((section.key, tuple(rows)))
            if seen:
                out += [f"### {title}", "", f"The same settings and defaults as `{seen}`'s `{section.title}`.", ""]
            else:
                written[(section.key, tuple(rows))] = command
                out += _section(title, section.description, rows)
    return "\n".join(out).rstrip() + "\n"


def describe(config: BaseModel, prefix: str = "") -> list[tuple[str, Any, str]]:
    """(dotted key, effective value, description) of every setting of ``config``, sections included."""
    rows: list[tuple[str, Any, str]] = []
    for name, field in type(config).model_fields.items():
        value = getattr(config, name)
        description = " ".join((field.description or "").split())
        if isinstance(value, BaseModel):
            rows += describe(value, f"{prefix}{name}.")
        elif isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
            for i, item in enumerate(value):
                rows += describe(item, f"{prefix}{name}[{i}].")
        else:
            rows.append((f"{prefix}{name}", str(value) if isinstance(value, Spec) else value, description))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spadegym.reference", description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="The page to write (docs/configuration.md).")
    parser.add_argument("--check", action="store_true", help="Write nothing; exit 1 when the page differs.")
    args = parser.parse_args(argv)
    page = reference()
    if args.check:
        current = args.path.read_text(encoding="utf-8") if args.path.is_file() else ""
        if current != page:
            print(f"{args.path} is out of step with the config models; run python -m spadegym.reference {args.path}")
            return 1
        return 0
    args.path.write_text(page, encoding="utf-8")
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def toml_value(value: Any) -> str:
    """``value`` as a TOML value: JSON's form for text, numbers and booleans (TOML reads those alike), tables
    inline; None has no TOML form, so callers leave such a setting out."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # no surrogate pairs, which TOML refuses
    return json.dumps(value)


def describe_toml(config: BaseModel) -> str:
    """Every setting of ``config`` as a TOML file that loads back to it: ``key = value`` under its description,
    an unset one commented out (TOML has no null), and a list of sections as ``[[key]]`` tables after the rest
    (a table header claims every key below it)."""
    plain: list[str] = []
    tables: dict[str, list[str]] = {}
    for key, value, description in describe(config):
        table, _, item_key = key.rpartition("].") if "[" in key else ("", "", key)
        lines = tables.setdefault(table + "]", []) if table else plain
        line = f"# {item_key} = (unset)" if value is None else f"{item_key} = {toml_value(value)}"
        lines += [f"# {description}", line, ""] if description else [line, ""]
    for table, lines in tables.items():
        plain += [f"[[{table.partition('[')[0]}]]", *lines]
    return "\n".join(plain).rstrip() + "\n"
