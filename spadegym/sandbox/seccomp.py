"""The seccomp layer: a BPF filter that denies what an environment never needs.

Installed in the worker with ``prctl`` through ctypes (no dependency), after
``PR_SET_NO_NEW_PRIVS``. Denied calls fail with EPERM, which Python raises as
``PermissionError``/``OSError`` and the worker reports as ``forbidden``. Threads
stay allowed (clone with CLONE_THREAD); new processes, sockets, exec, tracing,
mounts, namespaces, privilege changes, signals to other processes, SysV IPC,
POSIX message queues, memfd and clearing the death signal
(``prctl(PR_SET_PDEATHSIG)``) do not.
An unknown architecture or an x32 system call kills the worker.
"""

from __future__ import annotations

import ctypes
import functools
import platform
import struct

_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_SECCOMP = 21
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_PR_SET_PDEATHSIG = 1

_RET_KILL_PROCESS = 0x80000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
_X32_SYSCALL_BIT = 0x40000000

# BPF opcodes (linux/filter.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

# Offsets in struct seccomp_data: nr (u32), arch (u32), ip (u64), args[6] (u64, little endian).
_NR, _ARCH = 0, 4


def _arg_low(i: int) -> int:
    return 16 + 8 * i


def _arg_high(i: int) -> int:
    return 20 + 8 * i


# Denied with EPERM on every architecture (names absent from a table are skipped).
DENIED = (
    "execve", "execveat", "fork", "vfork", "socket", "socketpair", "connect", "bind", "listen",
    "accept", "accept4", "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
    "pivot_root", "chroot", "unshare", "setns", "setsid", "setpgid", "setuid", "setgid", "setreuid",
    "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid", "setgroups", "capset", "keyctl",
    "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "init_module", "finit_module", "delete_module", "reboot",
    "kexec_load", "kexec_file_load", "personality", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
    "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "open_by_handle_at", "name_to_handle_at",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "sethostname", "setdomainname", "iopl",
    "ioperm", "syslog", "move_pages", "migrate_pages", "kcmp", "lookup_dcookie", "fanotify_init",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "mknod", "mknodat", "uselib",
    "ustat", "modify_ldt", "vhangup", "setrlimit",
    # Kernel objects that outlive the worker or escape its memory limit: SysV IPC, POSIX
    # message queues, memory-backed files.
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd",
    "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
    "mq_getsetattr", "memfd_create", "memfd_secret",
)

# System call numbers, from the kernel's unistd tables.
_X86_64 = {
    "execve": 59, "execveat": 322, "fork": 57, "vfork": 58, "clone": 56, "clone3": 435,
    "socket": 41, "socketpair": 53, "connect": 42, "bind": 49, "listen": 50, "accept": 43,
    "accept4": 288, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "mount": 165,
    "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308, "kill": 62,
    "tgkill": 234, "tkill": 200, "setsid": 112, "setpgid": 109, "setuid": 105, "setgid": 106,
    "setreuid": 113, "setregid": 114, "setresuid": 117, "setresgid": 119, "setfsuid": 122,
    "setfsgid": 123, "setgroups": 116, "capset": 126, "keyctl": 250, "add_key": 248,
    "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "reboot": 169, "kexec_load": 246, "kexec_file_load": 320, "personality": 135,
    "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "pidfd_open": 434, "pidfd_send_signal": 424,
    "pidfd_getfd": 438, "open_by_handle_at": 304, "name_to_handle_at": 303, "swapon": 167,
    "swapoff": 168, "acct": 163, "quotactl": 179, "quotactl_fd": 443, "sethostname": 170,
    "setdomainname": 171, "iopl": 172, "ioperm": 173, "syslog": 103, "move_pages": 279,
    "migrate_pages": 256, "kcmp": 312, "lookup_dcookie": 212, "fanotify_init": 300, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159,
    "clock_adjtime": 305, "mknod": 133, "mknodat": 259, "uselib": 134, "ustat": 136,
    "modify_ldt": 154, "vhangup": 153, "setrlimit": 160, "prlimit64": 302, "prctl": 157,
    "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65, "semctl": 66,
    "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "mq_open": 240,
    "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
    "memfd_create": 319, "memfd_secret": 447,
}
_AARCH64 = {
    "execve": 221, "execveat": 281, "clone": 220, "clone3": 435, "socket": 198, "socketpair": 199,
    "connect": 203, "bind": 200, "listen": 201, "accept": 202, "accept4": 242, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "mount": 40, "umount2": 39, "pivot_root": 41,
    "chroot": 51, "unshare": 97, "setns": 268, "kill": 129, "tgkill": 131, "tkill": 130,
    "setsid": 157, "setpgid": 154, "setuid": 146, "setgid": 144, "setreuid": 145, "setregid": 143,
    "setresuid": 147, "setresgid": 149, "setfsuid": 151, "setfsgid": 152, "setgroups": 159,
    "capset": 91, "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280,
    "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "init_module": 105, "finit_module": 273, "delete_module": 106,
    "reboot": 142, "kexec_load": 104, "kexec_file_load": 294, "personality": 92,
    "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240, "pidfd_open": 434, "pidfd_send_signal": 424,
    "pidfd_getfd": 438, "open_by_handle_at": 265, "name_to_handle_at": 264, "swapon": 224,
    "swapoff": 225, "acct": 89, "quotactl": 60, "quotactl_fd": 443, "sethostname": 161,
    "setdomainname": 162, "syslog": 116, "move_pages": 239, "migrate_pages": 238, "kcmp": 272,
    "lookup_dcookie": 18, "fanotify_init": 262, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "settimeofday": 170,
    "clock_settime": 112, "adjtimex": 171, "clock_adjtime": 266, "mknodat": 33, "vhangup": 58,
    "setrlimit": 164, "prlimit64": 261, "prctl": 167,
    "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197, "semget": 190, "semctl": 191,
    "semtimedop": 192, "semop": 193, "msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189,
    "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184,
    "mq_getsetattr": 185, "memfd_create": 279, "memfd_secret": 447,
}
# machine name -> (AUDIT_ARCH_*, table, has x32 variant)
_ARCHES = {
    "x86_64": (0xC000003E, _X86_64, True),
    "aarch64": (0xC00000B7, _AARCH64, False),
}


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def unsupported_reason() -> str | None:
    """None when a filter can be installed here, else why not (cheap: one prctl)."""
    machine = platform.machine()
    if machine not in _ARCHES:
        return f"no system call table for the {machine} architecture"
    libc = _libc()
    if libc.prctl(_PR_GET_SECCOMP, 0, 0, 0, 0) < 0:
        return f"the kernel has no seccomp support (prctl: errno {ctypes.get_errno()})"
    return None


_PID_PLACEHOLDER = 0x7FFFFFFF  # patched with the worker's pid (pid_max is at most 2**22)


def build_filter(self_pid: int, machine: str | None = None) -> bytes:
    """The BPF program (packed sock_filter array) for this architecture.

    ``self_pid`` is the worker's own pid: kill/tkill/tgkill may target only it.
    """
    program, pid_offset = _program(machine or platform.machine())
    out = bytearray(program)
    struct.pack_into("=I", out, pid_offset, self_pid & 0xFFFFFFFF)
    return bytes(out)


@functools.lru_cache(maxsize=4)
def _program(machine: str) -> tuple[bytes, int]:
    """The program with a placeholder pid, and the byte offset of that pid (built once)."""
    audit_arch, table, has_x32 = _ARCHES[machine]
    prog: list[tuple[int, int | str, int | str, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 0, "kill", audit_arch),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if has_x32:
        prog.append((_JGE_K, "kill", 0, _X32_SYSCALL_BIT))
    for name in DENIED:
        if name in table:
            prog.append((_JEQ_K, "deny", 0, table[name]))
    prog += [
        (_JEQ_K, "clone", 0, table["clone"]),
        (_JEQ_K, "enosys", 0, table["clone3"]),  # glibc then falls back to clone
        (_JEQ_K, "self_only", 0, table["kill"]),
        (_JEQ_K, "self_only", 0, table["tkill"]),
        (_JEQ_K, "self_only", 0, table["tgkill"]),
        (_JEQ_K, "prlimit", 0, table["prlimit64"]),
        (_JEQ_K, "prctl", 0, table["prctl"]),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]
    labels = {}
    # clone: only threads (flags are the first argument on x86_64 and aarch64).
    labels["clone"] = len(prog)
    prog += [(_LD_W_ABS, 0, 0, _arg_low(0)), (_JSET_K, "allow", "deny", _CLONE_THREAD)]
    # kill(pid)/tkill(tid)/tgkill(tgid): the worker itself only; pid <= 0 never matches.
    labels["self_only"] = len(prog)
    prog += [(_LD_W_ABS, 0, 0, _arg_low(0)), (_JEQ_K, "allow", "deny", _PID_PLACEHOLDER)]
    pid_offset = (len(prog) - 1) * 8 + 4  # k is the last field of struct sock_filter
    # prlimit64: reading limits is fine, changing them is not.
    labels["prlimit"] = len(prog)
    prog += [
        (_LD_W_ABS, 0, 0, _arg_low(2)), (_JEQ_K, 0, "deny", 0),
        (_LD_W_ABS, 0, 0, _arg_high(2)), (_JEQ_K, "allow", "deny", 0),
    ]
    # prctl: the death signal the sandbox set stays (the option is an int: the low word is all of it).
    labels["prctl"] = len(prog)
    prog += [(_LD_W_ABS, 0, 0, _arg_low(0)), (_JEQ_K, "deny", "allow", _PR_SET_PDEATHSIG)]
    for name, ret in (("allow", _RET_ALLOW), ("deny", _RET_ERRNO | _EPERM),
                      ("enosys", _RET_ERRNO | _ENOSYS), ("kill", _RET_KILL_PROCESS)):
        labels[name] = len(prog)
        prog.append((_RET_K, 0, 0, ret))
    out = bytearray()
    for i, (code, jt, jf, k) in enumerate(prog):
        offsets = []
        for target in (jt, jf):
            off = labels[target] - i - 1 if isinstance(target, str) else target
            if not 0 <= off <= 255:
                raise ValueError("seccomp filter too long for 8-bit jumps")
            offsets.append(off)
        out += struct.pack("=HBBI", code, offsets[0], offsets[1], k)
    return bytes(out), pid_offset


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(self_pid: int) -> None:
    """Install the filter on the calling process; raises OSError when the kernel refuses."""
    program = build_filter(self_pid)
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "prctl(PR_SET_NO_NEW_PRIVS) failed")
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "prctl(PR_SET_SECCOMP) failed")
