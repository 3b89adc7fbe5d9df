"""The worker: one environment instance, serving requests until its pipe closes.

Runs in a process forked from the zygote, after ``hardening.confine`` has
applied every layer the machine supports. Every call into environment code is
wrapped so that nothing it raises, prints or returns can break the protocol.
"""

from __future__ import annotations

import io
import json
import os
import random
import sys
import time
import traceback
import types
import warnings
from dataclasses import dataclass
from typing import Any

from ..envfile import contract
from ..envfile.loader import (
    compile_env,
    declared_max_turns,
    instantiate,
    load_env_class,
    read_hint,
    seed_globals,
)
from ..envfile.reference import action_format
from ..envfile.static import SourceError, env_class, parse
from . import protocol, schema

_OPTIONAL_METHODS = ("valid_actions", "solution", "hint", "get_tools", "execute_tool")
_MAX_INFO_CHARS = schema.INFO_CHARS
_MAX_OBS_CHARS = schema.OBSERVATION_CHARS


class _CappedText(io.TextIOBase):
    """Captures what the environment prints, keeping at most ``limit`` characters."""

    def __init__(self, limit: int):
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, s: Any) -> int:
        s = str(s)
        room = self.limit - self.size
        if room > 0:
            self.parts.append(s[:room])
            self.size += min(len(s), room)
        return len(s)

    def take(self) -> str:
        text = "".join(self.parts)
        self.parts, self.size = [], 0
        return text


class _Forbidden(Exception):
    pass


def _classify(exc: BaseException) -> tuple[str, str]:
    """Map an exception escaping environment code to a failure category and message."""
    if isinstance(exc, MemoryError):
        return protocol.MEMORY, "ran out of memory (MemoryError): keep state small"
    if isinstance(exc, SystemExit):
        return protocol.CRASH, "called sys.exit(): environments must return values, never exit"
    if isinstance(exc, KeyboardInterrupt):
        return protocol.CRASH, "raised KeyboardInterrupt"
    if isinstance(exc, RecursionError):
        return protocol.EXCEPTION, "RecursionError: maximum recursion depth exceeded; avoid deep recursion"
    if isinstance(exc, (PermissionError, _Forbidden)):
        return protocol.FORBIDDEN, f"blocked operation: {type(exc).__name__}: {exc}"[:300]
    if isinstance(exc, OSError) and exc.errno in (1, 13):  # EPERM, EACCES from seccomp/landlock
        return protocol.FORBIDDEN, f"blocked operation: {type(exc).__name__}: {exc}"[:300]
    if isinstance(exc, (contract.ContractError, SourceError)):
        return protocol.INVALID_RETURN if isinstance(exc, contract.ContractError) else protocol.EXCEPTION, str(exc)
    tb = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(tb):
        if not frame.filename.startswith(os.path.dirname(os.path.dirname(__file__))):
            where = f" (line {frame.lineno} in {frame.name}: {(frame.line or '').strip()[:120]})"
            break
    return protocol.EXCEPTION, f"{type(exc).__name__}: {str(exc)[:300]}{where}"


# Built once: ``json.dumps`` with arguments builds a new encoder on every call, and every step's info goes through it.
_INFO_ENCODER = json.JSONEncoder(default=repr, allow_nan=False)


def _safe_info(info: dict[str, Any]) -> dict[str, Any]:
    """info is untrusted data: keep it JSON-safe and small."""
    if not info:
        return {}
    try:
        text = _INFO_ENCODER.encode(info)
    except (ValueError, TypeError, RecursionError):
        return {"_unserializable": True}
    if len(text) > _MAX_INFO_CHARS:
        return {"_truncated": text[:_MAX_INFO_CHARS]}
    value = json.loads(text)
    try:
        return schema.structure(value, "info", 2 * _MAX_INFO_CHARS)  # what the host accepts
    except schema.Rejected:  # nested too deep or holding huge numbers: kept as text
        return {"_truncated": text}


def _text_list(value: Any, what: str) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise contract.ContractError(f"{what}() must return a list, got {type(value).__name__}")
    return [str(v) for v in value]


_MAX_CRITERIA = 32


def _criteria(env: Any) -> list[bool | str] | None:
    """The reference's success criteria of a multi-step tool game (``_message_criteria``, callables
    over ``_state``) evaluated now: True/False each, or the error one raised; None without them."""
    criteria, state = getattr(env, "_message_criteria", None), getattr(env, "_state", None)
    if not isinstance(criteria, (list, tuple)) or not criteria or state is None:
        return None
    results: list[bool | str] = []
    for criterion in list(criteria)[:_MAX_CRITERIA]:
        try:
            results.append(bool(criterion(state)))
        except Exception as exc:  # noqa: BLE001 - what it raises is the finding
            results.append(f"{type(exc).__name__}: {exc}"[:200])
    return results


def _observation(obs: str) -> str:
    return obs if len(obs) <= _MAX_OBS_CHARS else obs[:_MAX_OBS_CHARS] + "...[truncated]"


@dataclass(frozen=True)
class Prepared:
    """A file parsed and compiled before its worker was forked: what ``EnvServer.load`` reads from the source."""

    source: str
    filename: str
    class_name: str
    code: types.CodeType
    action_format: str


def prepare(source: str, filename: str, facts: tuple[str, str] | None = None) -> Prepared | None:
    """Compile ``source`` and read its class name and action format, running none of its code.

    The zygote calls this before forking a file's workers, so they share one compilation. ``facts``:
    the class name and action format the host read from the same source (``static.env_class``,
    ``reference.action_format``), which spares the syntax tree. None when any step fails or warns:
    the worker then does all of it itself and reports what it hits, as always.
    """
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if facts is None:
                tree = parse(source, filename)
                class_name, fmt = env_class(tree).name, action_format(source, filename, tree)
                code = compile_env(tree, filename)
            else:
                (class_name, fmt), code = facts, compile_env(source, filename)
    except Exception:  # noqa: BLE001 - the worker meets the same failure and reports it
        return None
    return None if caught else Prepared(source, filename, class_name, code, fmt)


#: The file the zygote prepared for this worker (set in the forked child, before it serves).
prepared: Prepared | None = None


class EnvServer:
    """Dispatches protocol operations to the one environment instance."""

    def __init__(self) -> None:
        self.cls: type | None = None
        self.env: Any = None
        self.max_turns: int | None = None
        self.action_format = contract.PLAIN
        self.handlers = {"load": self.load, "reset": self.reset, "step": self.step, "tool": self.tool,
                         "tools": self.tools, "call": self.call, "ping": lambda: "pong"}

    def _extras(self, want: list[str]) -> dict[str, Any]:
        extras: dict[str, Any] = {}
        if "valid_actions" in want and callable(getattr(self.env, "valid_actions", None)):
            extras["valid_actions"] = _text_list(self.env.valid_actions(), "valid_actions")
        if "hint" in want:
            extras["hint"] = read_hint(self.env)
        if "tools" in want and callable(getattr(self.env, "get_tools", None)):
            extras["tools"] = contract.normalize_tools(self.env.get_tools())
        if "criteria" in want:
            criteria = _criteria(self.env)
            if criteria is not None:
                extras["criteria"] = criteria
        return extras

    def load(self, source: str, filename: str = "<env>", max_turns: int | None = None) -> dict[str, Any]:
        ready = prepared
        if ready is not None and ready.source == source and ready.filename == filename:
            self.cls = load_env_class(source, filename, compiled=(ready.class_name, ready.code))
            self.action_format = ready.action_format
        else:
            tree = parse(source, filename)  # parsed once: loading, and reading the action format
            self.cls = load_env_class(source, filename, tree)
            self.action_format = action_format(source, filename, tree)
        self.env = instantiate(self.cls, max_turns)
        self.max_turns = declared_max_turns(self.env)
        methods = [m for m in _OPTIONAL_METHODS if getattr(self.env, m, None) is not None]
        return {"class_name": self.cls.__name__, "max_turns": self.max_turns, "methods": methods,
                "action_format": self.action_format}

    def reset(self, seed: int | None = None, want: list[str] | None = None) -> dict[str, Any]:
        self._require()
        seed_globals(seed)
        res = contract.normalize_reset(self.env.reset(seed=seed))
        out = {"observation": _observation(res.observation), "info": _safe_info(res.info)}
        out.update(self._extras(want or []))
        return out

    def step(self, action: str, want: list[str] | None = None, raw: bool = False) -> dict[str, Any]:
        self._require()
        if not isinstance(action, str):
            raise contract.ContractError("actions are strings")
        # Every action, the gate's probes' and the agents', reaches step in the form the file expects;
        # ``raw``: a reply the reference hands over as written (a file in its conventions, no box).
        delivered = action if raw else contract.deliver_action(action, self.action_format)
        return self._moved(contract.normalize_step(self.env.step(delivered), self.reference), want)

    def tool(self, name: str, arguments: dict[str, Any] | None = None,
             want: list[str] | None = None) -> dict[str, Any]:
        """A tool call: ``execute_tool``'s return read by the contract, answered like ``step``."""
        return self.tools([{"name": name, "arguments": arguments}], want)

    def tools(self, calls: list[dict[str, Any]], want: list[str] | None = None) -> dict[str, Any]:
        """Tool calls of one turn, in order until one ends the episode; their outputs make one observation."""
        self._require()
        fn = getattr(self.env, "execute_tool", None)
        if not callable(fn):
            raise contract.ContractError("the environment lists tools (get_tools) but has no "
                                         "execute_tool(self, name, arguments) method")
        if not isinstance(calls, list) or not calls:
            raise contract.ContractError("tool calls are a non-empty list")
        outputs, last = [], None
        for call in calls:
            name, arguments = (call.get("name"), call.get("arguments")) if isinstance(call, dict) else (None, None)
            if not isinstance(name, str) or not isinstance(arguments, (dict, type(None))):
                raise contract.ContractError("tool calls are a name and a dict of arguments")
            last = contract.normalize_tool_result(fn(name, arguments or {}), self.reference)
            outputs.append(last.observation)
            if last.terminated or last.truncated:
                break
        assert last is not None
        last.observation = "\n\n".join(outputs)
        return self._moved(last, want)

    def _moved(self, res: contract.StepResult, want: list[str] | None) -> dict[str, Any]:
        """The reply to a step or a tool call."""
        out = {
            "observation": _observation(res.observation), "reward": res.reward,
            "terminated": res.terminated, "truncated": res.truncated, "info": _safe_info(res.info),
        }
        if not (res.terminated or res.truncated):
            out.update(self._extras(want or []))
        elif "hint" in (want or []):
            out.update(self._extras(["hint"]))
        return out

    def call(self, method: str, args: list[Any] | None = None) -> Any:
        self._require()
        if method not in _OPTIONAL_METHODS:
            raise _Forbidden(f"method {method!r} is not part of the environment contract")
        if method == "hint":
            return read_hint(self.env)
        fn = getattr(self.env, method, None)
        if not callable(fn):
            raise contract.ContractError(f"the environment has no {method}() method")
        value = fn(*(args or []))
        if method == "solution" and isinstance(value, str):
            value = [value]  # a reference answer: the one action that wins
        if method in ("valid_actions", "solution"):
            return _text_list(value, method)
        if method == "get_tools":
            return contract.normalize_tools(value)
        return json.loads(json.dumps(value, default=repr))

    @property
    def reference(self) -> bool:
        """Whether the file follows the reference's conventions (its rules then apply: bool rewards count)."""
        return self.action_format != contract.PLAIN

    def _require(self) -> None:
        if self.env is None:
            raise contract.ContractError("no environment loaded")


class _LineReader:
    def __init__(self, fd: int, limit: int):
        self.fd, self.limit, self.buf = fd, limit, bytearray()

    def readline(self) -> bytes | None:
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line = bytes(self.buf[:nl])
                del self.buf[: nl + 1]
                return line
            if len(self.buf) > self.limit:
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buf += chunk


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _reply(request_id: int, value: Any, capture: _CappedText, start: float) -> bytes:
    try:
        return protocol.encode({"id": request_id, "ok": True, "value": value, "output": capture.take(),
                         "seconds": time.perf_counter() - start})
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:
        raise contract.ContractError(f"returned a value that cannot be sent as JSON: {exc}") from None


# The module-level functions of ``random`` (``random.choice``, ``random.seed``, ...): methods of one hidden instance.
_RANDOM_FUNCTIONS = [name for name, value in vars(random).items() if getattr(value, "__self__", None) is random._inst]


class _Slots:
    """The environment instances one worker hosts, one per episode it serves at a time (``slot``).

    Each slot has its own module namespace (``load`` runs the file for it) and its own module-level
    ``random``, swapped in by rebinding the module's functions (copying a generator's state costs more
    than a step): episodes sharing a worker draw the numbers they would draw in workers of their own.
    The rest of the process is shared, which is why only a family's rendering shares a worker.
    """

    def __init__(self) -> None:
        self.servers: dict[int, EnvServer] = {}
        self.randoms: dict[int, dict[str, Any]] = {}
        self.current: int | None = None
        self.initial = random.getstate()  # the state a worker of its own would start from

    def enter(self, slot: int, fresh: bool) -> EnvServer:
        """The slot's server (a new one for ``load``), with its ``random`` in place."""
        if fresh or slot not in self.servers:
            generator = random.Random()
            generator.setstate(self.initial)
            self.servers[slot] = EnvServer()
            self.randoms[slot] = {"_inst": generator, **{name: getattr(generator, name) for name in _RANDOM_FUNCTIONS}}
            self.current = None
        if slot != self.current:
            vars(random).update(self.randoms[slot])
            self.current = slot
        return self.servers[slot]


def serve(in_fd: int, out_fd: int, output_limit: int = 16_384, line_limit: int = 1 << 22) -> None:
    """Answer requests until the host closes the pipe, in the order they came. Never returns into zygote code."""
    capture = _CappedText(output_limit)
    slots = _Slots()
    reader = _LineReader(in_fd, line_limit)
    while True:
        line = reader.readline()
        if line is None:
            return
        try:
            req = protocol.decode(line)
            request_id, op = req.pop("id"), req.pop("op")
            server = slots.enter(req.pop("slot", 0), fresh=op == "load")
            handler = server.handlers[op]
        except Exception:  # malformed request from the host: nothing sensible to answer
            return
        sys.stdout = sys.stderr = capture
        start = time.perf_counter()
        try:
            data = _reply(request_id, handler(**req), capture, start)
        except BaseException as exc:  # noqa: BLE001 - the sandbox's whole point
            category, message = _classify(exc)
            data = protocol.encode({"id": request_id, "ok": False, "category": category, "message": message,
                             "output": capture.take(), "seconds": time.perf_counter() - start})
        try:
            _write_all(out_fd, data)
        except BaseException:  # noqa: BLE001 - host went away or value not writable
            return
