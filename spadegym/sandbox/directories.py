"""The sandbox's directories on disk: made with an owner's lock, removed however deep, swept when abandoned.

A sandbox keeps every worker's scratch dir under one root in the temp dir. The
zygote removes the root when its owner ends (even by SIGKILL); when the zygote
is killed too, nothing is left to do it, so each root holds an owner lock (an
``flock`` that the kernel drops with the owner's last descriptor) and every new
sandbox removes the roots whose lock nobody holds.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile

ROOT_PREFIX = "spadegym-sandbox-"
#: The owner lock in a root; a root without one (being made, or from an old version) is never swept.
OWNER_LOCK = ".owner"
#: Entries a scratch scan reads at most: more files than this counts as over the quota.
SCAN_LIMIT = 10_000


def make_root() -> tuple[str, int]:
    """A new sandbox root (mode 0711: workers with uids of their own reach their scratch dirs) and its lock fd.

    The lock file is locked under a private name, then renamed into place, so a
    sweep never sees an unlocked lock file of a live sandbox.
    """
    root = tempfile.mkdtemp(prefix=ROOT_PREFIX)
    os.chmod(root, 0o711)
    staged = os.path.join(root, OWNER_LOCK + ".new")
    fd = os.open(staged, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(staged, os.path.join(root, OWNER_LOCK))
    return root, fd


def sweep_abandoned(folder: str | None = None) -> list[str]:
    """Remove this user's sandbox roots in ``folder`` (the temp dir) whose owner has ended; return them."""
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(ROOT_PREFIX)]
    except OSError:
        return removed
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue
            fd = os.open(os.path.join(entry.path, OWNER_LOCK), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # no lock file: being made, or not ours to judge
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its owner (or a forked copy of it) still runs
        finally:
            os.close(fd)
        remove_tree(entry.path)
        removed.append(entry.path)
    return removed


def remove_tree(path: str) -> None:
    """Delete a scratch tree, however deep the environment made it.

    ``shutil.rmtree`` recurses in Python and raises RecursionError on a tree
    about a thousand directories deep, which a worker can make in a few
    milliseconds; ``rm -rf`` has no such limit and runs only in that case.
    """
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        subprocess.run(["rm", "-rf", "--one-file-system", path], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def disk_usage(path: str) -> int:
    """Bytes the files under ``path`` occupy; iterative and capped, since the tree is the environment's."""
    total, stack, seen = 0, [path], 0
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > SCAN_LIMIT:
                        return 1 << 62
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
        except OSError:
            continue
    return total
