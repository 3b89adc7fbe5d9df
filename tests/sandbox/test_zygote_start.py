"""Starting the zygote ahead of timed work: it answers once ready, and a second start costs nothing."""

from __future__ import annotations

import time

import pytest

from spadegym.sandbox import Sandbox, SandboxConfig

TINY = "class TEnv:\n    def reset(self, seed=None):\n        return 'o', {}\n    def step(self, a):\n        return 'o', 0.0, True, False, {}\n"


def test_start_waits_for_a_ready_zygote_and_is_idempotent():
    with Sandbox() as box:
        box.start()
        zygote = box._zygote
        assert zygote is not None and zygote.poll() is None
        again = time.perf_counter()
        box.start()
        assert box._zygote is zygote and time.perf_counter() - again < 0.05  # no second handshake
        handle = box.open(TINY, "t.py")
        assert handle.loaded.ok and handle.reset(seed=1).ok
        handle.close()


def test_a_zygote_that_died_is_started_again():
    with Sandbox() as box:
        box.start()
        box._zygote.kill()
        box._zygote.wait()
        box.start()
        assert box._zygote.poll() is None
        assert box.open(TINY, "t.py").loaded.ok


PROBE = ("import sys\n\nclass PEnv:\n    def reset(self, seed=None):\n"
         "        return str(sorted(m for m in ('wave',) if m in sys.modules)), {}\n"
         "    def step(self, a):\n        return 'o', 0.0, True, False, {}\n")


def test_a_configured_module_is_in_every_worker_from_the_start_and_a_file_never_adds_one_for_the_next():
    uses_wave = "import wave\n\n" + PROBE.replace("PEnv", "NEnv")
    with Sandbox(SandboxConfig(preload=["wave"])) as box:  # the same before and after any file
        assert box.open(PROBE, "p.py").reset(seed=0).value["observation"] == "['wave']"
    with Sandbox(SandboxConfig(preload=[])) as box:  # a file's import stays in its own worker
        assert box.open(uses_wave, "n.py").loaded.ok
        assert box.open(PROBE, "p.py").reset(seed=0).value["observation"] == "[]"


ALLOCATES = ("class MEnv:\n    def reset(self, seed=None):\n        block = bytearray(120 << 20)\n"
             "        return str(len(block) >> 20), {}\n    def step(self, a):\n        return 'o', 0.0, True, False, {}\n")


def test_a_file_gets_the_same_memory_budget_whether_or_not_the_zygote_preloads_a_module():
    """The preloaded modules' address space is the zygote's, not charged to a worker's memory_mb."""
    pytest.importorskip("reasoning_gym")
    for preload in ([], ["reasoning_gym"]):  # 165 MB of address space in the zygote
        with Sandbox(SandboxConfig(memory_mb=192, preload=preload)) as box:
            fits = box.open(ALLOCATES, "m.py").reset(seed=0)
            assert fits.ok and fits.value["observation"] == "120", (preload, fits.message)
