"""The zygote: a pre-warmed interpreter that forks one worker per request.

Started by the host as ``python -c BOOT FD [--netns]`` with a clean environment
(``host.WORKER_ENVIRON``), the package's location on stdin. It imports everything a worker needs once (and, with
``--netns``, enters an empty network namespace every worker inherits), then for
each spawn request receives the worker's two pipe ends over its Unix socket,
forks, and answers ``{"pid": N}``. When a worker ends it sends
``{"exit": N, "status": "..."}`` so the host can say how it died.

No worker outlives the process that owns the sandbox: the zygote watches its
owner (end of file on the socket, and a pidfd, which also fires when a forked
copy of the owner still holds the socket) and kills its workers when the owner
ends; each worker asks the kernel to SIGKILL it when the zygote ends
(``hardening.die_with_parent``), so killing the zygote itself leaks nothing.
On its way out (owner gone, socket closed, SIGTERM) the zygote also removes the
sandbox directory, its cwd, so a killed owner leaves nothing in /tmp.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import sys
from collections import OrderedDict

# Pre-import what workers use so a fork starts warm.
from ..envfile import loader as _loader  # noqa: F401
from . import hardening, worker
from .config import WARM_MODULES, SandboxConfig

# Worker pipes move to random high fd numbers (above RLIMIT_NOFILE, which only
# limits new fds): code writing fake replies to guessed fds hits nothing.
_HIDDEN_FD_LOW, _HIDDEN_FD_SPAN = 256, 700


def describe_status(status: int) -> str:
    """``exited with code 3`` / ``killed by SIGSEGV`` for a wait status."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"killed by {name}"
    if os.WIFEXITED(status):
        return f"exited with code {os.WEXITSTATUS(status)}"
    return f"ended with wait status {status}"


def _hide(fds: tuple[int, int]) -> tuple[int, int]:
    first = _HIDDEN_FD_LOW + int.from_bytes(os.urandom(2), "little") % _HIDDEN_FD_SPAN
    moved = []
    for offset, fd in enumerate(fds):
        target = first + 1 + offset * (1 + os.urandom(1)[0] % 7)
        os.dup2(fd, target)
        os.close(fd)
        moved.append(target)
    return moved[0], moved[1]


def _run_worker(spec: dict, in_fd: int, out_fd: int, zygote: int) -> None:
    try:
        # Own process group (the host kills the whole group), but not a new session,
        # because with autogroup scheduling each session is its own scheduling group
        # and pipelined steps spread across many groups are starved.
        os.setpgid(0, 0)
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        in_fd, out_fd = _hide((in_fd, out_fd))
        config = SandboxConfig(**spec["config"])
        hardening.confine(config, spec["scratch"], {in_fd, out_fd}, uid=spec.get("uid"), parent=zygote)
    except BaseException:  # noqa: BLE001 - never fall back into the zygote loop
        os._exit(hardening.CONFINE_FAILED_EXIT)
    try:
        worker.serve(in_fd, out_fd, config.output_limit, config.line_limit)
    except BaseException:  # noqa: BLE001
        os._exit(70)
    os._exit(0)


def _owner_watch() -> int | None:
    """A pidfd that becomes readable when the owner (our parent) ends; None where the kernel has none."""
    try:
        return os.pidfd_open(os.getppid())
    except (AttributeError, OSError):
        return None  # the socket's end of file still tells


def _owner_gone(sock: socket.socket, owner: int | None) -> bool:
    """Wait for a request; True when the owner ended first (its pidfd is readable)."""
    if owner is None:
        return False
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(owner, select.POLLIN)
    return any(fd == owner for fd, _event in poller.poll())


def _address_space() -> int:
    """This process's address space in bytes (what RLIMIT_AS bounds)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


#: Address space the preloaded modules added to the zygote, so to every worker forked after them.
_preloaded_bytes = 0


def _preload(modules: list[str]) -> None:
    """Import the configuration's trusted modules before any worker, single-threaded (a fork keeps only this thread):
    every worker of the sandbox starts with the same modules, whatever the files before it imported."""
    global _preloaded_bytes
    missing = [m for m in modules if m not in sys.modules]
    if not missing:
        return
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    before = _address_space()
    for module in missing:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the file's own import then fails with its message
            pass
    _preloaded_bytes += max(0, _address_space() - before)


#: The largest file the zygote compiles (the gate's default ``max_source_bytes``): its compile runs outside any
#: worker's time budget and holds up every spawn, so a larger one is left to its worker and that worker's limits.
_PREPARE_BYTES = 65_536

#: Files prepared lately (``worker.prepare``), by their bytes and filename; None where preparing failed.
_prepared: OrderedDict[tuple[bytes, str], worker.Prepared | None] = OrderedDict()
_PREPARED_FILES = 8


def _read_source(fd: int) -> bytes:
    """The whole content of the file the host passed (a memfd holding the source), closing it."""
    try:
        size, data = os.fstat(fd).st_size, b""
        while len(data) < size:
            chunk = os.pread(fd, size - len(data), len(data))
            if not chunk:
                break
            data += chunk
        return data
    finally:
        os.close(fd)


def _prepare(spec: dict, source_fd: int | None, facts: tuple[str, str] | None = None) -> worker.Prepared | None:
    """The worker's file parsed and compiled once for all the workers forked to load it.

    Safe in the zygote: parsing, compiling and reading the syntax tree run none of the file's code
    (the host parses every file it validates the same way), and nothing prepared is ever executed here.
    """
    if source_fd is None:
        return None
    try:
        data = _read_source(source_fd)
    except OSError:
        return None
    filename = spec.get("prepare")
    if not isinstance(filename, str) or len(data) > _PREPARE_BYTES:
        return None
    key = (data, filename)
    if key in _prepared:
        _prepared.move_to_end(key)
        return _prepared[key]
    try:
        ready = worker.prepare(data.decode("utf-8", "surrogatepass"), filename, facts)
    except UnicodeDecodeError:
        ready = None
    _prepared[key] = ready
    if len(_prepared) > _PREPARED_FILES:
        _prepared.popitem(last=False)
    return ready


def _with_preloads(spec: dict) -> dict:
    """The worker's limits with the preloaded modules' address space added to ``memory_mb``: they are the zygote's,
    so a file gets the same budget whether or not the configuration preloads them."""
    if _preloaded_bytes:
        spec["config"]["memory_mb"] += -(-_preloaded_bytes // (1 << 20))
    return spec


def main(sock_fd: int, netns: bool = False, preload: list[str] | None = None) -> None:
    # The cwd is the sandbox root, which holds every worker's scratch dir: not a library.
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
    _preload(preload or [])
    if netns:
        try:
            hardening.enter_private_network()
        except OSError:
            pass  # the probe reported this layer missing already
    hardening.prepare()
    sock = socket.socket(fileno=sock_fd)
    owner = _owner_watch()
    zygote = os.getpid()
    children: set[int] = set()

    def reap(_signum: int, _frame: object) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            children.discard(pid)
            note = json.dumps({"exit": pid, "status": describe_status(status)}).encode() + b"\n"
            try:
                sock.send(note, socket.MSG_DONTWAIT)
            except OSError:
                pass  # host busy or gone: the status is only a courtesy

    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the host's to handle
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        _serve(sock, owner, children, zygote)
    finally:
        if os.getpid() == zygote:  # never in a worker forked a moment before
            _clean_up(children)


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _serve(sock: socket.socket, owner: int | None, children: set[int], zygote: int) -> None:
    """Fork a worker per request until the owner closes the socket or ends."""
    while not _owner_gone(sock, owner):
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 3)
        except OSError:
            msg, fds = b"", []
        if not msg:
            break
        spec = json.loads(msg)
        if spec.get("op") == "kill":
            children.discard(spec["pid"])
            continue
        if spec.get("op") == "ping":  # the host waits until the imports above are done
            sock.sendall(b'{"ready": true}\n')
            continue
        if spec.get("op") == "prepare":  # a file about to be loaded, with what the host read from it
            facts = spec.get("facts")
            _prepare(spec, fds[0] if fds else None, tuple(facts) if isinstance(facts, list) and len(facts) == 2 else None)
            sock.sendall(b'{"ready": true}\n')
            continue
        if spec.get("op") == "preload":  # slow trusted modules a file imports, once, before its workers fork
            _preload([m for m in spec.get("modules", []) if m in WARM_MODULES])
            sock.sendall(b'{"ready": true}\n')
            continue
        in_fd, out_fd = fds[:2]
        ready = _prepare(spec, fds[2] if len(fds) > 2 else None)
        pid = os.fork()
        if pid == 0:
            sock.close()
            if owner is not None:
                os.close(owner)
            worker.prepared = ready
            _run_worker(_with_preloads(spec), in_fd, out_fd, zygote)
        os.close(in_fd)
        os.close(out_fd)
        children.add(pid)
        sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")


def _clean_up(children: set[int]) -> None:
    """Kill every worker, then remove the sandbox directory (the cwd): an owner that was
    killed (SIGTERM, SIGKILL) leaves nothing behind in /tmp."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for pid in list(children):
        # The group, and the worker itself: without seccomp it may have left its group.
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
    from .directories import remove_tree  # only now: workers need none of it

    remove_tree(os.getcwd())


def main_from_argv(argv: list[str]) -> None:
    """``FD [--netns] [--preload a,b]``; stdin (which told the bootstrap where spadegym lives) becomes /dev/null."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    preload = argv[argv.index("--preload") + 1].split(",") if "--preload" in argv else []
    main(int(argv[0]), netns="--netns" in argv[1:], preload=preload)


if __name__ == "__main__":
    main_from_argv(sys.argv[1:])
