"""A file compiled once, in the zygote, for every worker that loads it (``worker.prepare``).

The workers of a prepared file run the zygote's code object instead of parsing and compiling the
file again; what a worker reports (the class, the failures, the warnings) is what it reports alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spadegym.envfile.loader import compile_env
from spadegym.envfile.static import parse
from spadegym.sandbox import Sandbox, host, worker

TWO_CLASSES = '''
class FirstEnv:
    def reset(self, seed=None):
        return "first", {}

    def step(self, action):
        return "done", 1.0, True, False, {}


class SecondEnv(FirstEnv):
    def reset(self, seed=None):
        return "second", {}
'''
ENV = '''
class PlainEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        return "done", 1.0, True, False, {}
'''
#: Files whose preparation must leave the work to the worker: a syntax error, an error only the compiler
#: finds, a compiler warning (which the worker prints into its load's output).
UNPREPARED = {
    "syntax": "class BrokenEnv:\n    def reset(self, seed=None)\n",
    "compiler": "return 3\n" + ENV,
    "warning": "CHECK = 1 is 1\n" + ENV,
}


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    with Sandbox() as sandbox:
        yield sandbox


def test_prepare_compiles_the_code_a_worker_would() -> None:
    ready = worker.prepare(TWO_CLASSES, "two.py")
    assert ready is not None and (ready.class_name, ready.action_format) == ("FirstEnv", "plain")
    own = compile_env(parse(TWO_CLASSES, "two.py"), "two.py")
    assert ready.code == own and ready.code.co_filename == "two.py"  # bytecode, constants, names, line table
    told = worker.prepare(TWO_CLASSES, "two.py", ("FirstEnv", "plain"))  # from the text, with the host's reading
    assert told is not None and told.code == own


@pytest.mark.parametrize("name", sorted(UNPREPARED))
def test_failures_and_warnings_are_left_to_the_worker(name: str) -> None:
    assert worker.prepare(UNPREPARED[name], f"{name}.py") is None
    assert worker.prepare(UNPREPARED[name], f"{name}.py", ("PlainEnv", "plain")) is None


def test_workers_run_what_the_zygote_prepared_for_their_file_only(box: Sandbox) -> None:
    # Told the second class, the zygote prepares it: workers loading that file under that name run it.
    box.prepare(TWO_CLASSES, "two.py", "SecondEnv", "plain")
    handles = [box.open(TWO_CLASSES, "two.py") for _ in range(2)]
    other = box.open(TWO_CLASSES, "other.py")  # another name: not the prepared file, read by the worker itself
    try:
        for h in handles:
            assert h.info["class_name"] == "SecondEnv"
            assert h.reset(seed=1).value["observation"] == "second"
        assert other.info["class_name"] == "FirstEnv"
        assert other.reset(seed=1).value["observation"] == "first"
    finally:
        for h in (*handles, other):
            h.close()


def test_a_file_larger_than_the_gate_reads_is_left_to_its_worker(box: Sandbox) -> None:
    big = TWO_CLASSES + "#" * 70_000 + "\n"  # past the 64 KiB the zygote compiles outside any time budget
    box.prepare(big, "big.py", "SecondEnv", "plain")
    env = box.open(big, "big.py")
    try:  # the worker read the file itself: the first class, not the one the zygote was told
        assert env.info["class_name"] == "FirstEnv"
    finally:
        env.close()


@pytest.mark.parametrize("name", sorted(UNPREPARED))
def test_a_load_says_the_same_with_and_without_the_zygote(box: Sandbox, name: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def load() -> tuple[str, str, str]:
        env = box.open(UNPREPARED[name], f"{name}.py")
        try:
            return env.loaded.status, env.loaded.message, env.loaded.output
        finally:
            env.close()

    prepared = load()
    monkeypatch.setattr(host, "_source_file", lambda source: None)  # no source for the zygote: the worker alone
    assert load() == prepared
    if name == "warning":
        assert prepared[0] == "ok" and "SyntaxWarning" in prepared[2]
    else:
        assert prepared[0] == "exception"
