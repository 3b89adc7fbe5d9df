"""The Landlock layer: read the interpreter and the code, write only the scratch dir.

Unprivileged and stackable (Linux >= 5.13). The ABI version the kernel reports
decides which rights exist: the file rights grow up to ABI 5, TCP bind/connect
can be handled from ABI 4 (we allow no port at all), and from ABI 6 signals and
abstract Unix sockets can be scoped to the worker itself.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
import sys
from collections.abc import Iterable

# Same numbers on every architecture (added after the tables were unified).
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_REFER = 1 << 13
_FS_TRUNCATE = 1 << 14
_FS_IOCTL_DEV = 1 << 15
_NET_BIND_TCP = 1 << 0
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
_SCOPE_SIGNAL = 1 << 1

# No EXECUTE: a worker never runs programs (loading extension modules is an mmap, not an exec).
_READ_DIR = _FS_READ_FILE | _FS_READ_DIR
_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV

# What the interpreter may need to read besides its own prefix and code.
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/etc/localtime",
               "/dev/urandom", "/dev/random", "/proc/self/status")
DEVICES_RW = ("/dev/null", "/dev/zero")


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> tuple[int, str]:
    """(ABI version, "") when Landlock works here, else (0, why not)."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if version >= 1:
        return int(version), ""
    err = ctypes.get_errno()
    if err == 38:
        return 0, "the kernel has no Landlock support (Linux >= 5.13 with CONFIG_SECURITY_LANDLOCK)"
    if err == 95:
        return 0, "Landlock is built in but not enabled (add landlock to the lsm= boot parameter)"
    return 0, f"landlock_create_ruleset failed with errno {err}"


def handled_fs(abi: int) -> int:
    rights = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        rights |= _FS_REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    if abi >= 5:
        rights |= _FS_IOCTL_DEV
    return rights


def read_paths(package_dir: str) -> list[str]:
    """Directories and files a worker may read: the interpreter, its libraries, our package."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, package_dir, *SYSTEM_READ}
    prefixes = (sys.prefix, sys.base_prefix)
    for entry in sys.path:
        # Library dirs only: a source checkout on PYTHONPATH would expose its other files.
        if entry and (entry.startswith(prefixes) or "-packages" in entry):
            paths.add(entry)
    return sorted(paths)


def restrict(abi: int, read: Iterable[str], write: Iterable[str]) -> None:
    """Restrict the calling process: ``read`` read-only, ``write`` fully, nothing else."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    fs = handled_fs(abi)
    attr = struct.pack("=Q", fs)
    if abi >= 4:
        attr += struct.pack("=Q", _NET_BIND_TCP | _NET_CONNECT_TCP)  # and no port rule: no TCP
    if abi >= 6:
        attr += struct.pack("=Q", _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(_SYS_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        rules = [(p, _READ_DIR) for p in read] + [(p, fs & ~_FS_EXECUTE) for p in write]
        rules += [(p, _FS_READ_FILE | _FS_WRITE_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV) for p in DEVICES_RW]
        for path, rights in rules:
            _add_path_rule(libc, int(ruleset), path, rights & fs)
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(int(ruleset)), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(int(ruleset))


def _add_path_rule(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # absent on this machine: nothing to allow
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        attr = struct.pack("=Qi", rights, fd)  # struct landlock_path_beneath_attr is packed
        buf = ctypes.create_string_buffer(attr, len(attr))
        if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), buf,
                        ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)
