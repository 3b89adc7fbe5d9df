"""Starting the zygote ahead of timed work: it answers once ready, and a second start costs nothing."""

from __future__ import annotations

import time

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


def test_a_trusted_module_is_imported_by_the_zygote_once_a_file_imports_it_and_never_a_file_named_one():
    uses_wave = "import wave\n\n" + PROBE.replace("PEnv", "NEnv")
    with Sandbox(SandboxConfig(preload=["wave"])) as box:
        assert box.open(PROBE, "p.py").reset(seed=0).value["observation"] == "[]"  # nothing before it is needed
        assert box.open(uses_wave, "n.py").loaded.ok
        assert box.open(PROBE, "p.py").reset(seed=0).value["observation"] == "['wave']"  # inherited from now on
    with Sandbox(SandboxConfig(preload=[])) as box:  # not trusted: the file imports it itself, in its worker only
        assert box.open(uses_wave, "n.py").loaded.ok
        assert box.open(PROBE, "p.py").reset(seed=0).value["observation"] == "[]"


ALLOCATES = ("class MEnv:\n    def reset(self, seed=None):\n        block = bytearray(120 << 20)\n"
             "        return str(len(block) >> 20), {}\n    def step(self, a):\n        return 'o', 0.0, True, False, {}\n")


def test_a_file_gets_the_same_memory_budget_whether_or_not_another_made_the_zygote_preload_a_module():
    """The preloaded modules' address space is the zygote's: it was charged to every later worker's memory_mb
    (numpy's 84 MB took a 120 MB allocation from fitting in 192 MB to a MemoryError)."""
    uses_numpy = "import numpy\n\n" + TINY
    with Sandbox(SandboxConfig(memory_mb=192, preload=["numpy"])) as box:
        assert box.open(ALLOCATES, "m.py").reset(seed=0).value["observation"] == "120"
        assert box.open(uses_numpy, "n.py").loaded.ok
        after = box.open(ALLOCATES, "m.py").reset(seed=0)
        assert after.ok and after.value["observation"] == "120", after.message
