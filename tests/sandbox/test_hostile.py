"""Hostile environments run through the real Sandbox at the tiers this machine gives.

Every attack lives in ``tests/fixtures/hostile/``. For each one: the host keeps
running, the outcome has the expected failure category, the next environment in
the same Sandbox works, nothing is written outside scratch, no connection leaves.
The module runs twice: at the strongest tier the machine supports (strict, so a
worker that could not apply a layer refuses to run) and with every optional
layer off. An attack that a tier cannot contain is skipped with the reason.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spadegym.sandbox import Outcome, Sandbox, SandboxConfig, probe

HOSTILE = Path(__file__).parents[1] / "fixtures" / "hostile"
LIMITS = {"step_timeout_s": 1.0, "load_timeout_s": 2.0, "memory_mb": 512, "file_size_mb": 4, "scratch_mb": 16}
SECRET = "sk-spadegym-test-secret-4242"

BENIGN = '''
class EchoEnv:
    def reset(self, seed=None):
        self.n = 0
        return f"seed {seed}", {}

    def step(self, action):
        self.n += 1
        return f"echo {action}", 1.0, self.n >= 3, False, {}
'''


@pytest.fixture(scope="module", params=["strongest", "process"])
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    if request.param == "strongest":
        config = SandboxConfig(**LIMITS, min_tier=probe().tier)
    else:
        config = SandboxConfig(**LIMITS, seccomp=False, landlock=False, namespaces=False)
    with Sandbox(config) as sandbox:
        yield sandbox


def require(box: Sandbox, *layers: str, attack: str) -> None:
    """Skip unless one of ``layers`` is in force (the attack would really do harm)."""
    if not any(box.report.layers.get(layer) for layer in layers):
        pytest.skip(f"tier '{box.report.tier}' cannot contain {attack}: needs {' or '.join(layers)}")


def attack(box: Sandbox, name: str, action: str, seed: int = 0) -> tuple[Outcome, str]:
    """Load a hostile fixture, reset it, send ``action``; return the step outcome and scratch dir."""
    env = box.open((HOSTILE / f"{name}.py").read_text(), f"{name}.py")
    assert env.loaded.ok, env.loaded.message
    assert env.reset(seed=seed).ok
    assert env.worker is not None
    scratch = env.worker.scratch
    outcome = env.step(action)
    env.close()
    return outcome, scratch


def still_works(box: Sandbox) -> None:
    """The next environment in the same sandbox loads, resets and steps normally."""
    env = box.open(BENIGN, "echo.py")
    assert env.loaded.ok, env.loaded.message
    first = env.reset(seed=5)
    assert first.ok and first.value["observation"] == "seed 5"
    step = env.step("hello")
    assert step.ok and step.value["observation"] == "echo hello"
    env.close()


def test_busy_loop_times_out_and_scratch_is_removed(box: Sandbox) -> None:
    outcome, scratch = attack(box, "busy_loop", "go")
    assert outcome.status == "timeout", outcome
    assert not os.path.exists(scratch)
    still_works(box)


def test_sleep_forever_times_out(box: Sandbox) -> None:
    outcome, _ = attack(box, "sleep_forever", "go")
    assert outcome.status == "timeout", outcome
    still_works(box)


def test_endless_loop_at_import_times_out_the_load(box: Sandbox) -> None:
    env = box.open((HOSTILE / "load_loop.py").read_text(), "load_loop.py")
    assert env.loaded.status == "timeout", env.loaded
    still_works(box)


def test_memory_bomb_is_a_memory_failure(box: Sandbox) -> None:
    outcome, _ = attack(box, "memory_bomb", "go")
    assert outcome.status == "memory", outcome
    still_works(box)


def test_fork_bomb_is_forbidden(box: Sandbox) -> None:
    require(box, "seccomp", attack="a fork bomb")
    outcome, _ = attack(box, "fork_bomb", "go")
    assert outcome.status == "forbidden", outcome
    still_works(box)


def test_child_cannot_escape_with_setsid(box: Sandbox, tmp_path: Path) -> None:
    require(box, "seccomp", attack="a child that leaves the worker's session")
    marker = tmp_path / "escaped.txt"
    outcome, _ = attack(box, "setsid_escape", str(marker))
    assert outcome.status == "forbidden", outcome
    time.sleep(0.7)  # the escaped child would have written by now
    assert not marker.exists()
    still_works(box)


@pytest.mark.parametrize("how", ["system", "subprocess"])
def test_programs_never_run(box: Sandbox, tmp_path: Path, how: str) -> None:
    require(box, "seccomp", "landlock", attack="os.system / subprocess")
    marker = tmp_path / f"{how}.txt"
    outcome, _ = attack(box, "run_programs", f"{how} {marker}")
    if how == "system":
        assert outcome.ok and outcome.value["observation"] != "status 0", outcome
    else:
        assert outcome.status == "forbidden", outcome
    assert not marker.exists()
    still_works(box)


def test_tcp_connection_never_leaves(box: Sandbox) -> None:
    require(box, "seccomp", "landlock", "netns", attack="a TCP connection to the host")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    try:
        outcome, _ = attack(box, "tcp_connect", str(listener.getsockname()[1]))
        expected = "forbidden" if box.report.layers["seccomp"] else outcome.status
        assert outcome.status == expected and not outcome.ok, outcome
        readable, _, _ = select.select([listener], [], [], 0.2)
        assert readable == [], "a connection reached the host"
    finally:
        listener.close()
    still_works(box)


def test_writes_outside_scratch_are_forbidden(box: Sandbox, tmp_path: Path) -> None:
    require(box, "landlock", "uid", attack="writes outside the scratch dir")
    neighbour = box.open(BENIGN, "echo.py")  # another worker's scratch is outside too
    assert neighbour.worker is not None
    for target in (tmp_path / "pwned.txt", Path(neighbour.worker.scratch) / "pwned.txt"):
        outcome, scratch = attack(box, "write_outside", str(target))
        assert outcome.status == "forbidden", outcome
        assert not target.exists()
    neighbour.close()
    still_works(box)


def test_host_secrets_stay_out_of_reach(box: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require(box, "landlock", attack="reads of host files and process environments")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    secret_file = tmp_path / "credentials"
    secret_file.write_text(SECRET)
    # A host process whose environment holds the key, as a training job's would.
    holder = subprocess.Popen(["sleep", "30"], env={"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": SECRET})
    try:
        outcome, _ = attack(box, "read_secrets", str(secret_file))
    finally:
        holder.kill()
        holder.wait()
    assert outcome.ok, outcome
    assert SECRET not in outcome.value["observation"]
    assert SECRET not in outcome.output
    still_works(box)


def test_one_huge_file_hits_the_file_size_limit(box: Sandbox) -> None:
    outcome, scratch = attack(box, "disk_fill", "one")
    assert outcome.status in ("exception", "forbidden"), outcome
    assert "File too large" in outcome.message or "file size" in outcome.message
    still_works(box)


def test_many_files_fill_only_the_scratch_quota_and_are_removed(box: Sandbox) -> None:
    outcome, scratch = attack(box, "disk_fill", "many")
    if box.report.layers["tmpfs"]:  # the private tmpfs is full long before the deadline
        assert outcome.status == "exception" and "No space left" in outcome.message, outcome
        assert outcome.seconds < LIMITS["step_timeout_s"]
    else:
        assert outcome.status == "timeout", outcome
    assert not os.path.exists(scratch)
    still_works(box)


def test_files_kept_past_the_quota_cost_the_worker(box: Sandbox) -> None:
    """24 MB kept in a 16 MB quota: refused by the tmpfs, or the worker is replaced before the next episode."""
    env = box.open((HOSTILE / "disk_fill.py").read_text(), "disk_fill.py")
    assert env.reset().ok and env.worker is not None
    worker, scratch = env.worker, env.worker.scratch
    outcome = env.step("keep")
    if box.report.layers["tmpfs"]:
        assert outcome.status == "exception" and "No space left" in outcome.message, outcome
        assert not os.listdir(scratch), "the tmpfs showed in the host's mount namespace"
    else:
        assert outcome.ok, outcome
        assert env.reset().ok
        assert env.worker is not worker and not os.path.exists(scratch)
    env.close()
    still_works(box)


def test_a_tree_deeper_than_the_recursion_limit_is_removed(box: Sandbox) -> None:
    outcome, scratch = attack(box, "deep_dirs", "go")
    assert outcome.ok, outcome
    assert not os.path.exists(scratch)
    still_works(box)


@pytest.mark.parametrize(("how", "says"), [("sys", "sys.exit"), ("os", "exited with code 7")])
def test_exits_are_crashes(box: Sandbox, how: str, says: str) -> None:
    outcome, _ = attack(box, "exits", how)
    assert outcome.status == "crash", outcome
    assert says in outcome.message
    still_works(box)


@pytest.mark.parametrize("how", ["python", "json", "eval", "repr"])
def test_deep_recursion_is_an_exception(box: Sandbox, how: str) -> None:
    outcome, _ = attack(box, "deep_recursion", how)
    assert outcome.status == "exception", outcome
    still_works(box)


def test_real_stack_overflow_is_a_crash(box: Sandbox) -> None:
    outcome, _ = attack(box, "deep_recursion", "stack")
    assert outcome.status == "crash", outcome
    assert "SIGSEGV" in outcome.message
    still_works(box)


def test_garbage_output_and_fake_replies_on_guessed_fds(box: Sandbox) -> None:
    env = box.open((HOSTILE / "garbage_output.py").read_text(), "garbage_output.py")
    assert env.loaded.ok
    first = env.reset(seed=0)
    assert first.ok and first.value["observation"] == "ready"
    assert 0 < len(first.output) <= box.config.output_limit
    for _ in range(2):  # a forged line would desynchronise the second step
        step = env.step("go")
        assert step.ok and step.value["observation"] == "honest", step
        assert step.value["reward"] == 0.0
    env.close()
    still_works(box)


def test_forged_reply_on_the_real_pipe_is_a_protocol_failure(box: Sandbox) -> None:
    outcome, _ = attack(box, "forged_reply", "go")
    assert outcome.status == "protocol", outcome
    still_works(box)


def test_unserialisable_returns(box: Sandbox) -> None:
    env = box.open((HOSTILE / "unserialisable.py").read_text(), "unserialisable.py")
    assert env.loaded.ok
    assert env.reset(seed=1).status == "invalid_return"
    assert env.reset(seed=0).ok
    assert env.step("nan").status == "invalid_return"
    assert env.step("bool").status == "invalid_return"
    info = env.step("info")
    assert info.ok and isinstance(info.value["info"], dict), info
    assert env.call("solution").status == "invalid_return"
    tools = env.call("get_tools")
    assert tools.ok and "lambda" in tools.value[0]["fn"], tools  # a schema that is not JSON: shown as text
    env.close()
    still_works(box)


def test_monkeypatched_json_breaks_only_its_worker(box: Sandbox) -> None:
    outcome, _ = attack(box, "monkeypatch", "json")
    assert outcome.status == "protocol", outcome
    still_works(box)


def test_monkeypatched_builtins_break_only_their_worker(box: Sandbox) -> None:
    env = box.open((HOSTILE / "monkeypatch.py").read_text(), "monkeypatch.py")
    assert env.reset(seed=0).ok
    env.step("builtins")
    after = env.step("again")  # whatever the patch broke, the answer is an Outcome
    assert after.status in ("ok", "protocol", "exception", "invalid_return", "crash", "timeout"), after
    env.close()
    still_works(box)


@pytest.mark.parametrize("target", ["parent", "group", "all"])
def test_signals_to_other_processes_are_forbidden(box: Sandbox, target: str) -> None:
    require(box, "seccomp", attack="signals to the parent or to every process (as root)")
    outcome, _ = attack(box, "signal_parent", target)
    assert outcome.status == "forbidden", outcome
    assert box._zygote is not None and box._zygote.poll() is None, "the zygote was killed"
    still_works(box)


def test_reaching_os_through_python_tricks_runs_nothing(box: Sandbox, tmp_path: Path) -> None:
    require(box, "seccomp", "landlock", attack="running programs")
    marker = tmp_path / "reached.txt"
    outcome, _ = attack(box, "reach_os", str(marker))
    assert outcome.status == "forbidden", outcome
    assert not marker.exists()
    still_works(box)
