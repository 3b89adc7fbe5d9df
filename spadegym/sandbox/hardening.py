"""Confinement applied inside a freshly forked worker, layer by layer.

Layers, weakest first (see ``config.TIERS``):

- ``process``: own session, stdio to /dev/null, other fds closed, scratch dir as
  cwd, clean environment, rlimits. Always.
- ``seccomp``: a system-call filter (``seccomp.py``): no exec, fork, sockets,
  ptrace, mounts, privilege changes or signals to other processes.
- ``landlock``: read only the interpreter and the code, write only the scratch
  dir, no TCP, signals scoped to the worker (``landlock.py``).
- ``namespaces``: when privileges allow, the zygote enters an empty network
  namespace that every worker inherits (``netns``); each worker gets an IPC
  namespace of its own (``ipcns``: SysV shared memory, semaphores and message
  queues die with it and reach no other process), runs as an unprivileged uid
  of its own (``uid``; on a root host even with ``namespaces`` off), and its
  scratch dir is a private tmpfs of ``scratch_mb`` and ``scratch_inodes`` in a
  mount namespace of its own (``tmpfs``): RLIMIT_FSIZE bounds one file, the
  tmpfs bounds all of them and their number, so no environment can fill the
  disk or kernel memory by writing file after file. The mount dies with the worker.

Each layer fails soft: ``probe`` tests them once in a throwaway child process
and reports which are available (with the reason for those that are not);
``confine`` applies the enabled ones, and raises only when a layer that
``min_tier`` requires cannot be applied.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import json
import logging
import os
import resource
import signal
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import landlock, seccomp
from .config import TIERS, SandboxConfig

log = logging.getLogger("spadegym.sandbox")

_MB = 1 << 20
_CLONE_NEWNET = 0x40000000
_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_KEEPCAPS = 1, 8
_CAP_DAC_READ_SEARCH = 2
_CAP_VERSION_3 = 0x20080522
#: Worker uids come from ``UID_BASE`` on, ``UID_BLOCK`` to a sandbox (group ids alike): a sandbox
#: locks a block of its own (``claim_uid_block``), so two sandboxes never share a uid.
UID_BASE, UID_SLOTS, UID_BLOCK = 61000, 4096, 128
#: Threads plus processes one worker uid may own (fork is already blocked by seccomp).
_NPROC_PER_UID = 64
PACKAGE_DIR = str(Path(__file__).resolve().parents[1])
#: Exit code of a worker that could not set itself up (e.g. a layer ``min_tier`` requires failed).
CONFINE_FAILED_EXIT = 71

# Which tier each layer belongs to.
LAYER_TIER = {"process": "process", "seccomp": "seccomp", "landlock": "landlock",
              "netns": "namespaces", "ipcns": "namespaces", "uid": "namespaces", "tmpfs": "namespaces"}
LAYERS = tuple(LAYER_TIER)


@dataclass
class TierReport:
    """What isolation this machine gives workers."""

    tier: str
    layers: dict[str, bool] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    landlock_abi: int = 0

    def rank(self) -> int:
        return TIERS.index(self.tier)

    def to_dict(self) -> dict:
        return {"tier": self.tier, "layers": dict(self.layers), "missing": dict(self.missing),
                "landlock_abi": self.landlock_abi}


# -- probing -------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _errno_text(exc: OSError) -> str:
    return os.strerror(exc.errno) if exc.errno else str(exc)


def _try_layers() -> dict[str, str | None]:
    """In a forked child: apply each layer for real; None = works, else the reason."""
    result: dict[str, str | None] = {}
    reason = seccomp.unsupported_reason()
    try:
        mount_private_scratch("/tmp", 1, os.getuid())  # in this throwaway child's own namespace
        result["tmpfs"] = None
    except OSError as exc:
        result["tmpfs"] = f"cannot mount a private tmpfs ({_errno_text(exc)}): needs root or CAP_SYS_ADMIN"
    abi, landlock_reason = landlock.abi_version()
    try:
        _unshare(_CLONE_NEWIPC)
        result["ipcns"] = None
    except OSError as exc:
        result["ipcns"] = f"cannot unshare an IPC namespace ({_errno_text(exc)}): needs root or CAP_SYS_ADMIN"
    try:
        enter_private_network()
        result["netns"] = None
    except OSError as exc:
        result["netns"] = f"cannot unshare a network namespace ({_errno_text(exc)}): needs root or CAP_SYS_ADMIN"
    if abi:
        try:
            landlock.restrict(abi, [], [])
            result["landlock"] = None
        except OSError as exc:
            result["landlock"] = f"Landlock ABI {abi} refused the ruleset ({_errno_text(exc)})"
    else:
        result["landlock"] = landlock_reason
    result["landlock_abi"] = str(abi)  # type: ignore[assignment]
    try:
        _switch_uid(UID_BASE + UID_SLOTS - 1, keep_read=False)
        result["uid"] = None
    except OSError as exc:
        result["uid"] = f"cannot switch to a per-worker uid ({_errno_text(exc)}): needs root"
    if reason is None:
        try:
            seccomp.install(os.getpid())
            try:
                os.setsid()
                reason = "the filter was installed but did not block setsid"
            except PermissionError:
                reason = None
        except OSError as exc:
            reason = f"the kernel refused the filter ({_errno_text(exc)})"
    result["seccomp"] = reason
    return result


@functools.lru_cache(maxsize=1)
def _machine_layers() -> dict[str, str | None]:
    """Try every layer once in a throwaway child (a few ms); cached per process."""
    _libc()  # load before forking: the child must not take the loader lock
    seccomp._libc()
    landlock._libc()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read_end)
            os.write(write_end, json.dumps(_try_layers()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    try:
        return json.loads(data)
    except ValueError:
        reason = "the probe process failed"
        return {**{name: reason for name in LAYERS[1:]}, "landlock_abi": "0"}


def probe(config: SandboxConfig | None = None) -> TierReport:
    """Find the strongest tier this machine supports, for this config (cheap; cached)."""
    config = config or SandboxConfig()
    found = _machine_layers()
    # The uid switch is no namespace: a root host always drops workers to uids of their own.
    enabled = {"seccomp": config.seccomp, "landlock": config.landlock, "netns": config.namespaces,
               "ipcns": config.namespaces, "uid": True, "tmpfs": config.namespaces}
    layers, missing = {"process": True}, {}
    for name in LAYERS[1:]:
        if not enabled[name]:
            config_field = "namespaces" if LAYER_TIER[name] == "namespaces" else name
            missing[name] = f"disabled in the config (sandbox.{config_field} = false)"
        elif found.get(name):
            missing[name] = str(found[name])
        layers[name] = name not in missing
    tier = "process"
    for candidate in TIERS[1:]:
        if all(layers[n] for n, t in LAYER_TIER.items() if TIERS.index(t) <= TIERS.index(candidate)):
            tier = candidate
        else:
            break
    report = TierReport(tier, layers, missing, int(found.get("landlock_abi") or 0))
    _log_once(report)
    return report


@functools.lru_cache(maxsize=8)
def _log_once_key(text: str) -> None:
    log.info(text)


def _log_once(report: TierReport) -> None:
    off = ", ".join(f"{k} ({v})" for k, v in report.missing.items())
    _log_once_key(f"sandbox tier: {report.tier}" + (f"; missing: {off}" if off else ""))


# -- layers ----------------------------------------------------------------------

def _unshare(flags: int) -> None:
    if _libc().unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def enter_private_network() -> None:
    """Move the calling process into a new, empty network namespace (no interface up)."""
    _unshare(_CLONE_NEWNET)


def enter_private_ipc() -> None:
    """Move the calling process into a new IPC namespace: its SysV objects and message queues die with it."""
    _unshare(_CLONE_NEWIPC)


def mount_private_scratch(path: str, size_mb: int, uid: int, inodes: int = 4096) -> None:
    """Give the calling process a mount namespace of its own with a tmpfs of ``size_mb`` at ``path``.

    Mounts are made private first, so the tmpfs never shows in the host's namespace.
    ``inodes`` bounds its files and directories: each costs kernel memory that no size limit counts.
    """
    libc = _libc()
    _unshare(_CLONE_NEWNS)
    for args in ((None, b"/", None, _MS_REC | _MS_PRIVATE, None),
                 (b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC,
                  f"size={size_mb}m,nr_inodes={inodes},mode=0700,uid={uid},gid={uid}".encode())):
        if libc.mount(*args) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _switch_uid(uid: int, keep_read: bool) -> None:
    """Become ``uid`` for good; optionally keep only CAP_DAC_READ_SEARCH.

    The capability is kept when the interpreter lives where other users cannot
    read (e.g. under /root): the worker must still import standard modules, and
    Landlock limits what it may read.
    """
    libc = _libc()
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    if keep_read and libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_KEEPCAPS) failed")
    os.setresuid(uid, uid, uid)
    if keep_read:
        header = _CapHeader(_CAP_VERSION_3, 0)
        data = (_CapData * 2)()
        data[0].effective = data[0].permitted = 1 << _CAP_DAC_READ_SEARCH
        if libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
            raise OSError(ctypes.get_errno(), "capset failed")


def claim_uid_block() -> tuple[int, int | None]:
    """(first uid, lock fd) of a block of ``UID_BLOCK`` worker uids no other live sandbox holds.

    Each block has a lock file in a root-only directory; the lock lives as long as
    the fd (the process), so a crashed host frees its block. When every block is
    taken the sandbox shares one (fd None), as it would without the locks.
    """
    blocks = UID_SLOTS // UID_BLOCK
    folder = Path(tempfile.gettempdir()) / "spadegym-uids"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder.is_symlink() or folder.stat().st_uid != os.geteuid():
            raise OSError("not our directory")
        for block in range(blocks):
            fd = os.open(folder / f"block-{block}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return UID_BASE + block * UID_BLOCK, fd
            except OSError:
                os.close(fd)
    except OSError:
        pass
    return UID_BASE + (os.getpid() % blocks) * UID_BLOCK, None


def _others_can_read(path: str) -> bool:
    """Whether a uid without privileges can reach and read ``path``."""
    p = Path(path)
    try:
        for parent in [*reversed(p.parents), p]:
            mode = parent.stat().st_mode
            if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
                return False
        return bool(p.stat().st_mode & stat.S_IROTH)
    except OSError:
        return True  # absent paths need nothing


@functools.lru_cache(maxsize=1)
def _worker_plan() -> tuple[int, tuple[str, ...], bool]:
    """(Landlock ABI, paths to read, whether a uid switch must keep read access); per zygote."""
    abi, _why = landlock.abi_version()
    paths = tuple(landlock.read_paths(PACKAGE_DIR))
    keep_read = not all(_others_can_read(p) for p in (sys.prefix, sys.base_prefix, PACKAGE_DIR))
    return abi, paths, keep_read


def prepare() -> None:
    """Warm every cache a worker needs, in the zygote, before the first fork."""
    _libc()
    seccomp._libc()
    landlock._libc()
    seccomp.build_filter(0)
    _worker_plan()


def set_rlimits(config: SandboxConfig) -> None:
    limits = {
        resource.RLIMIT_AS: config.memory_mb * _MB,
        resource.RLIMIT_CPU: config.cpu_seconds,
        resource.RLIMIT_FSIZE: config.file_size_mb * _MB,
        resource.RLIMIT_NOFILE: config.open_files,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_MEMLOCK: 0,  # no locked memory, no real-time or raised priority
        resource.RLIMIT_RTPRIO: 0,
        resource.RLIMIT_NICE: 0,
    }
    for which, value in limits.items():
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def close_other_fds(keep: set[int]) -> None:
    low = 3
    for fd in sorted(keep):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1024)


def _required(config: SandboxConfig, layer: str) -> bool:
    return bool(config.min_tier) and TIERS.index(LAYER_TIER[layer]) <= TIERS.index(config.min_tier)


def die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this process when ``parent`` ends; end now if it already has.

    The setting is cleared by a uid or gid change, so it is made after the switch.
    """
    if _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(CONFINE_FAILED_EXIT)


def confine(config: SandboxConfig, scratch: str, keep_fds: set[int], uid: int | None = None,
            parent: int | None = None) -> list[str]:
    """Apply every enabled layer to the current (worker) process; return those in force.

    ``uid``: the unprivileged uid a root host gives this worker (``Sandbox`` picks it).
    A layer that fails is skipped, unless ``config.min_tier`` needs it: then the
    OSError propagates and the worker never serves (the host sees a crash).
    ``parent``: the zygote's pid; the worker dies with it (always, whatever the tier).
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    close_other_fds(keep_fds)
    applied = ["process"]
    if os.geteuid() != 0:
        uid = None
    if config.namespaces and uid is not None:
        try:
            mount_private_scratch(scratch, config.scratch_mb, uid, config.scratch_inodes)  # cwd is the tmpfs
            applied.append("tmpfs")
        except OSError:
            if _required(config, "tmpfs"):
                raise
        try:
            enter_private_ipc()
            applied.append("ipcns")
        except OSError:
            if _required(config, "ipcns"):
                raise
    if uid is not None:
        try:
            os.chown(scratch, uid, uid)  # before Landlock and before losing the right to
        except OSError:
            if _required(config, "uid"):
                raise
            uid = None
    os.chdir(scratch)
    os.environ.clear()
    os.environ.update({"HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    set_rlimits(config)
    sys.setrecursionlimit(2000)
    abi, read_paths, keep_read = _worker_plan()

    if config.landlock and abi:
        try:
            landlock.restrict(abi, read_paths, [scratch])
            applied.append("landlock")
        except OSError:
            if _required(config, "landlock"):
                raise
    if uid is not None:
        try:
            _switch_uid(uid, keep_read)
            resource.setrlimit(resource.RLIMIT_NPROC, (_NPROC_PER_UID, _NPROC_PER_UID))
            applied.append("uid")
        except OSError:
            if _required(config, "uid"):
                raise
    if parent is not None:
        die_with_parent(parent)
    if config.seccomp:
        try:
            seccomp.install(os.getpid())
            applied.append("seccomp")
        except (OSError, KeyError):
            if _required(config, "seccomp"):
                raise
    return applied
