"""A level: one environment as a run knows it, the same value from proposal to store.

    level = Level(source, skill="Logical Deduction", params=Params("key_rooms", {"rooms": 3, "variant": 1}))
    level = Level(remote=Remote(url="http://127.0.0.1:8000", reset_args={"level_id": "guess"}), skill="Logical Deduction")

A designer proposes it (inside a ``Candidate``, with the designer's bookkeeping),
the gate judges it, the level buffer holds it, a host opens it
(``executor.LevelHost``) and the store writes it and reads it back.

Its kind says where it runs: a ``file`` level is a standalone environment file,
played in the sandbox; a ``remote`` level is an OpenEnv server, played over the
wire. A remote level comes only from a run's own configuration (``--source
openenv:URL``): nothing in a file's content ever makes it one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import urllib.parse
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import BaseModel, Field, field_validator

from .envfile import EnvFileInfo, inspect_source, normalized_code_hash

FILE = "file"
REMOTE = "remote"
KINDS = (FILE, REMOTE)


@dataclass
class Lineage:
    """Where a level came from: its parents, the operator that made it, the designer, the mutation depth."""

    parents: list[str] = field(default_factory=list)  # env ids
    operator: str = "new"  # mutation operator or prompt kind
    designer: str = ""  # designer name and version
    depth: int = 0  # mutation depth (0 = fresh draw)


@dataclass(frozen=True)
class Params:
    """A level's place in its family: the family that renders it and every parameter it renders with.

    ``knobs`` is the one mapping of a family level's parameters, as the family's
    ``render`` takes them: its difficulty knobs and its structural variants
    (initial conditions, phrasing, layout, action names, reward structure), so a
    new kind of parameter needs no new field. A file that is no family's level
    may still declare its ``DIFFICULTY``: its knobs, with ``family`` None.
    """

    family: str | None = None
    knobs: dict[str, Any] = field(default_factory=dict)


#: The schemes an OpenEnv server's base URL may have (its WebSocket is reached at the matching ws scheme).
URL_SCHEMES = ("http", "https", "ws", "wss")


def server_url(url: str) -> str:
    """An OpenEnv server's base URL, without trailing slashes; a ValueError in one sentence for anything else.

    A host and port alone (``127.0.0.1:8000``) mean http; a scheme, host or port that no connection can use is
    refused here, where the run's configuration is read, rather than found out as a failed episode.
    """
    url = url.strip().rstrip("/")
    schemeless = "://" not in url
    full = f"http://{url}" if schemeless else url
    try:
        parts = urllib.parse.urlsplit(full)
        port = parts.port  # raises ValueError for a port out of range
    except ValueError as exc:
        raise ValueError(f"{url[:200]!r} is not a URL ({exc}); give the server's base URL, e.g. http://127.0.0.1:8000") from None
    # Without a scheme only host:port names a server: a bare word ("notaurl", a pool's name) is a mistake, not port 80.
    if (parts.scheme not in URL_SCHEMES or not parts.hostname or (schemeless and port is None)
            or any(c.isspace() or not c.isprintable() for c in url)):
        raise ValueError(f"{url[:200]!r} is not an OpenEnv server's URL; give its base URL with a scheme among "
                         f"{', '.join(URL_SCHEMES)} and a host, e.g. http://127.0.0.1:8000")
    return url


class RemoteOptions(BaseModel):
    """How to talk to an OpenEnv server (a remote level's settings beside its URL)."""

    model_config = {"extra": "forbid", "frozen": True}

    action_key: str = Field("message", min_length=1, description="openenv: the action field the server expects.")
    send_reply: bool = Field(False, description="openenv: send the agent's whole reply, not its boxed action (servers that parse replies, as spadegym serve does).")
    reset_args: dict[str, Any] = Field(default_factory=dict, description="openenv: extra reset arguments (e.g. a level_id).")
    max_turns: int = Field(25, ge=1, description="openenv: the turn budget of one episode.")


class Remote(RemoteOptions):
    """An OpenEnv environment server as a level: its URL and how to talk to it."""

    url: str = Field(..., min_length=1, description="The server's base URL (http://host:port).")

    @field_validator("url")
    @classmethod
    def _server_url(cls, value: str) -> str:
        return server_url(value)

    def settings(self) -> dict[str, Any]:
        """The settings as plain JSON (what the store writes)."""
        return self.model_dump(mode="json")


@dataclass(frozen=True)
class Level:
    """One environment: a file (``source``) or an OpenEnv server (``remote``), with its hint, skill, params and lineage."""

    source: str | None = None  # the environment file (kind file)
    skill: str = ""
    hint: str | None = None  # what the hint arm shows; None: the file's own hint (a remote level has none)
    params: Params = field(default_factory=Params)
    lineage: Lineage = field(default_factory=Lineage)
    remote: Remote | None = None  # the server (kind remote)

    def __post_init__(self) -> None:
        if (self.source is None) == (self.remote is None):
            raise ValueError("a level is either a file (source) or an OpenEnv server (remote), exactly one of them")

    @property
    def kind(self) -> str:
        return FILE if self.remote is None else REMOTE

    @property
    def family(self) -> str | None:
        return self.params.family

    @property
    def knobs(self) -> dict[str, Any]:
        return self.params.knobs

    @cached_property
    def code_hash(self) -> str:
        """What tells levels apart: a file's normalised code, a server's settings."""
        if self.remote is None:
            return normalized_code_hash(self.source or "")
        text = json.dumps(self.remote.settings(), sort_keys=True, separators=(",", ":"))
        return "remote-" + hashlib.sha256(text.encode()).hexdigest()[:16]

    @cached_property
    def info(self) -> EnvFileInfo:
        """What the level declares: a file's class, methods and metadata (read without running it); a server's skill
        and turn budget (it has no methods to read, no solution among them)."""
        if self.remote is None:
            return inspect_source(self.source or "")
        return EnvFileInfo(class_name="", skill=self.skill or None, declared_max_turns=self.remote.max_turns)

    def to_dict(self) -> dict[str, Any]:
        """The level as stored (a proposal's candidate, an environments row): plain JSON values; a remote
        level's kind and settings beside them (a file level's are implied)."""
        data: dict[str, Any] = {"source": self.source, "skill": self.skill, "hint": self.hint, "family": self.family,
                                "knobs": self.knobs, "lineage": dataclasses.asdict(self.lineage)}
        if self.remote is not None:
            data.update(kind=self.kind, remote=self.remote.settings())
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Level:
        """The level ``to_dict`` (or a stored row) holds; unknown lineage keys are dropped, malformed remote
        settings are a pydantic ``ValidationError`` (the caller names where they came from)."""
        remote = Remote.model_validate(data["remote"]) if data.get("kind", FILE) != FILE else None
        return cls(None if remote is not None else data["source"], skill=data.get("skill") or "",
                   hint=data.get("hint"), params=Params(data.get("family"), dict(data.get("knobs") or {})),
                   lineage=Lineage(**{k: v for k, v in (data.get("lineage") or {}).items() if k in _LINEAGE}),
                   remote=remote)


_LINEAGE = frozenset(f.name for f in dataclasses.fields(Lineage))
