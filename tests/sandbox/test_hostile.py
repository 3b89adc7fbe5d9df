"""Hostile environments run through the real Sandbox at the tiers this machine gives.

Every attack lives in ``tests/fixtures/hostile/``. For each one: the host keeps
running, the outcome has the expected failure category, the next environment in
the same Sandbox works, nothing is written outside scratch, no connection leaves.
The module runs twice: at the strongest tier the machine supports (strict, so a
worker that could not apply a layer refuses to run) and with every optional
layer off. An attack that a tier cannot contain is skipped with the reason.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spadegym.agents import make_agent
from spadegym.envfile import parse_tool_call
from spadegym.rollout.play import play_file
from spadegym.sandbox import Outcome, Sandbox, SandboxConfig, probe
from spadegym.validate import ValidationConfig, validate_source

HOSTILE = Path(__file__).parents[1] / "fixtures" / "hostile"
LIMITS = {"step_timeout_s": 1.0, "load_timeout_s": 2.0, "memory_mb": 512, "file_size_mb": 4, "scratch_mb": 16}
SECRET = "sk-spadegym-test-secret-4242"
#: What "in bounded time" means here: far above any honest delay on a loaded machine, far below the
#: minutes (or forever) each of these cases took before its bound. Outcomes, not timings, prove a bound.
PATIENCE_S = 30.0

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
    # 1,500 mkdirs on a loaded machine's disk (the process tier has no tmpfs) can take seconds.
    with Sandbox(box.config.model_copy(update={"step_timeout_s": 20.0})) as patient:
        outcome, scratch = attack(patient, "deep_dirs", "go")
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


# -- the host survives anything a file does (bounded work, checked replies, no shared IPC, safe text) --

def fixture_source(name: str) -> str:
    return (HOSTILE / f"{name}.py").read_text()


def test_an_endless_loop_on_the_solutions_move_is_a_timeout(box: Sandbox) -> None:
    outcome, scratch = attack(box, "endless_solution_step", "go")
    assert outcome.status == "timeout", outcome
    assert not os.path.exists(scratch)
    still_works(box)


def test_a_worker_that_blocks_signals_and_stops_itself_times_out(box: Sandbox) -> None:
    started = time.perf_counter()
    outcome, _ = attack(box, "stops_itself", "go")
    assert outcome.status == "timeout", outcome
    assert time.perf_counter() - started < PATIENCE_S
    still_works(box)


@pytest.mark.parametrize(("forgery", "category"), [
    ("reward_list", "protocol"), ("reward_digits", "protocol"), ("reward_nan", "protocol"),
    ("obs_dict", "protocol"), ("obs_deep", "protocol"), ("info_deep", "too_large"),
    ("menu_numbers", "protocol"), ("flag_text", "protocol"), ("huge_hint", "too_large"),
])
def test_forged_reply_values_are_refused_by_the_schema(box: Sandbox, forgery: str, category: str) -> None:
    outcome, _ = attack(box, "forged_values", forgery)
    assert outcome.status == category, outcome
    assert len(outcome.message) < 400
    still_works(box)


def test_the_reply_pipe_and_host_paths_are_hidden_from_proc_self(box: Sandbox) -> None:
    require(box, "landlock", attack="reads of /proc/self (fds, mounts, environment)")
    outcome, _ = attack(box, "proc_self", "go")
    assert outcome.ok, outcome
    seen = json.loads(outcome.value["observation"])
    assert all(str(value).startswith("refused") for value in seen.values()), seen


def test_workers_see_only_a_minimal_environment_at_every_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # in the host's environment: never in a worker's
    config = SandboxConfig(**LIMITS, seccomp=False, landlock=False, namespaces=False)
    with Sandbox(config) as sandbox:
        outcome, _ = attack(sandbox, "proc_self", "go")
        assert sandbox._zygote is not None
        arguments = Path(f"/proc/{sandbox._zygote.pid}/cmdline").read_text().split("\0")[1:]  # after the interpreter
    assert outcome.ok, outcome
    environ = json.loads(outcome.value["observation"])["environ"]
    names = {entry.split("=", 1)[0] for entry in environ.split("\0") if entry}
    assert names == {"PATH", "LANG", "PYTHONHASHSEED"}, environ
    package_parent = str(HOSTILE.parents[2])
    for text in (environ, " ".join(arguments)):
        assert SECRET not in text and package_parent not in text, text


def test_a_deep_listed_tool_call_goes_to_step_and_deep_info_arrives_as_text(box: Sandbox) -> None:
    env = box.open(fixture_source("deep_tool_call"), "deep_tool_call.py")
    first = env.reset(seed=1, want=["valid_actions", "tools"])
    assert first.ok, first
    assert "_truncated" in first.value["info"]  # 600 levels deep: sent as text
    deep_call = first.value["valid_actions"][-1]
    assert parse_tool_call(deep_call) is None  # too deep to be a call: an ordinary action
    step = env.step(deep_call)
    assert step.ok and step.value["observation"] == "wrong", step
    assert json.dumps(step.value)  # what comes back can be copied and stored
    env.close()
    still_works(box)


def test_a_request_the_worker_never_reads_times_out_instead_of_blocking_the_host(box: Sandbox) -> None:
    env = box.open(fixture_source("stops_reading"), "stops_reading.py")
    assert env.reset(seed=0).ok
    started = time.perf_counter()
    outcome = env.step("x" * 1_000_000)  # far over the pipe buffer
    assert outcome.status == "timeout", outcome
    assert time.perf_counter() - started < PATIENCE_S
    env.close()
    still_works(box)


def test_declared_turns_are_capped_on_the_host(box: Sandbox) -> None:
    env = box.open(fixture_source("huge_max_turns"), "huge_max_turns.py")
    assert env.info["max_turns"] == box.config.max_episode_turns < 10**9
    env.close()


def test_an_episode_of_slow_steps_ends_at_its_time_budget() -> None:
    # Each 0.4 s step is far under its own deadline; the episode's 1.5 s, which is shorter, binds.
    config = SandboxConfig(**{**LIMITS, "step_timeout_s": 5.0}, episode_budget_s=1.5, seccomp=False,
                           landlock=False, namespaces=False)
    with Sandbox(config) as sandbox:
        env = sandbox.open(fixture_source("slow_steps"), "slow_steps.py")
        outcomes = [env.reset(seed=0)]
        while outcomes[-1].ok and len(outcomes) < 20:
            outcomes.append(env.step("go"))
        assert outcomes[-1].status == "timeout" and "episode_budget_s" in outcomes[-1].message, outcomes[-1]
        assert len(outcomes) <= 5  # 1.5 s of 0.4 s steps, counted from the reset
        assert env.reset(seed=1).ok  # a new episode has a new budget
        env.close()


@pytest.mark.parametrize("name", ["many_actions", "fresh_big_menu"])
def test_menus_over_the_size_caps_are_too_large(box: Sandbox, name: str) -> None:
    env = box.open(fixture_source(name), f"{name}.py")
    first = env.reset(seed=0, want=["valid_actions"])
    assert first.status == "too_large" and "valid_actions()" in first.message, first
    env.close()
    still_works(box)


def test_an_episode_brings_at_most_its_text_budget(box: Sandbox) -> None:
    env = box.open(fixture_source("big_observations"), "big_observations.py")
    outcomes = [env.reset(seed=0)]
    while outcomes[-1].ok and len(outcomes) < 1000:
        outcomes.append(env.step("go"))
    assert outcomes[-1].status == "too_large" and "episode_chars" in outcomes[-1].message, outcomes[-1]
    brought = sum(len(o.value["observation"]) for o in outcomes if o.ok)
    assert brought <= box.config.episode_chars
    env.close()
    still_works(box)


def _sysv_ids(table: str, key: int) -> list[int]:
    """Ids of the host's SysV objects (``shm`` or ``msg``) with ``key``."""
    rows = Path(f"/proc/sysvipc/{table}").read_text().splitlines()[1:]
    return [int(row.split()[1]) for row in rows if int(row.split()[0]) == key]


def _remove_sysv(key: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for shm in _sysv_ids("shm", key):
        libc.shmctl(shm, 0, None)  # IPC_RMID
    for queue in _sysv_ids("msg", key):
        libc.msgctl(queue, 0, None)


SYSV_KEY = 0x5BADC0DE


def test_sysv_ipc_objects_never_outlive_the_worker(box: Sandbox) -> None:
    if not Path("/proc/sysvipc/shm").exists():
        pytest.skip("no /proc/sysvipc on this machine")
    try:
        outcome, _ = attack(box, "sysv_ipc", "go")
        if box.report.layers["seccomp"]:
            assert outcome.status == "forbidden", outcome
        if not (box.report.layers["seccomp"] or box.report.layers["ipcns"]):
            pytest.skip(f"tier '{box.report.tier}' cannot contain SysV IPC: needs seccomp or ipcns")
        assert not _sysv_ids("shm", SYSV_KEY) and not _sysv_ids("msg", SYSV_KEY)
    finally:
        _remove_sysv(SYSV_KEY)
    still_works(box)


def test_an_ipc_namespace_alone_takes_sysv_objects_with_the_worker() -> None:
    if not probe().layers["ipcns"]:
        pytest.skip("no IPC namespaces on this machine (needs root)")
    config = SandboxConfig(**LIMITS, seccomp=False, landlock=False, min_tier=None)
    try:
        with Sandbox(config) as sandbox:
            outcome, _ = attack(sandbox, "sysv_ipc", "go")
            assert outcome.ok and "segment" in outcome.value["observation"], outcome
            assert not _sysv_ids("shm", SYSV_KEY) and not _sysv_ids("msg", SYSV_KEY)
    finally:
        _remove_sysv(SYSV_KEY)


def test_clearing_the_death_signal_is_forbidden(box: Sandbox) -> None:
    require(box, "seccomp", attack="a worker that outlives its zygote (tests/sandbox/test_owner_death.py "
            "shows the owner's watch still ends it)")
    env = box.open(fixture_source("clears_death_signal"), "clears_death_signal.py")
    outcome = env.reset(seed=0)
    assert outcome.status == "forbidden" and "PDEATHSIG" in outcome.message, outcome
    env.close()
    still_works(box)


def test_memfd_is_forbidden(box: Sandbox) -> None:
    require(box, "seccomp", attack="memory-backed files outside the address-space limit")
    outcome, _ = attack(box, "memfd_fill", "go")
    assert outcome.status == "forbidden", outcome
    still_works(box)


def test_files_without_end_hit_the_inode_bound_or_the_deadline(box: Sandbox) -> None:
    outcome, scratch = attack(box, "many_inodes", "go")
    if box.report.layers["tmpfs"]:
        assert outcome.status == "exception" and "No space left" in outcome.message, outcome
    else:
        assert outcome.status == "timeout", outcome
    assert not os.path.exists(scratch)
    still_works(box)


def test_lone_surrogates_arrive_replaced(box: Sandbox) -> None:
    env = box.open(fixture_source("surrogates"), "surrogates.py")
    first = env.reset(seed=0, want=["valid_actions", "hint"])
    assert first.ok, first
    step = env.step("0")
    assert step.ok, step
    for outcome in (first, step):
        text = json.dumps(outcome.value, ensure_ascii=False) + outcome.output
        text.encode("utf-8")  # no lone surrogate left anywhere
        assert "\ufffd" in text
    env.close()
    still_works(box)


def test_terminal_control_sequences_are_stripped(box: Sandbox) -> None:
    env = box.open(fixture_source("terminal_escapes"), "terminal_escapes.py")
    first = env.reset(seed=0, want=["valid_actions", "hint"])
    step = env.step("0")
    for outcome in (first, step):
        assert outcome.ok, outcome
        text = json.dumps(outcome.value, ensure_ascii=False) + outcome.output
        assert not any(ch in text for ch in "\x1b\x07\x08\r\x9b"), text
    assert first.value["observation"] == "Pick 0, 1 or 2 in \\boxed{}."
    assert first.value["hint"] == "the hint"
    env.close()
    still_works(box)


@pytest.mark.parametrize("power", ["nice", "realtime", "mlock", "immutable"])
def test_workers_of_a_root_host_have_no_root_powers(box: Sandbox, power: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("the host is not root: workers never were")
    still_works(box)  # the zygote is up, whichever test ran first
    assert box._zygote is not None
    zygote_nice = os.getpriority(os.PRIO_PROCESS, box._zygote.pid)
    outcome, scratch = attack(box, "root_powers", power)
    assert outcome.status == "forbidden", outcome
    assert box._zygote is not None and os.getpriority(os.PRIO_PROCESS, box._zygote.pid) == zygote_nice
    assert not os.path.exists(scratch)
    still_works(box)


def test_two_sandboxes_hand_out_different_worker_uids() -> None:
    if os.geteuid() != 0:
        pytest.skip("uids are per worker only on a root host")
    config = SandboxConfig(**LIMITS, seccomp=False, landlock=False, namespaces=False)
    with Sandbox(config) as first, Sandbox(config) as second:
        if first._uid_lock is None or second._uid_lock is None:
            pytest.skip("every uid block is held by other sandboxes on this machine right now")
        uids = []
        for sandbox in (first, second):
            env = sandbox.open(BENIGN, "echo.py")
            assert env.loaded.ok and env.worker is not None  # loaded: the worker has taken its own uid
            status = Path(f"/proc/{env.worker.pid}/status").read_text()
            uids.append(int(next(r for r in status.splitlines() if r.startswith("Uid:")).split()[1]))
            env.close()
    assert uids[0] != uids[1] and min(uids) >= 61000, uids


def test_a_host_killed_by_sigterm_leaves_no_sandbox_directory(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(
        "import sys, time\n"
        "from spadegym.sandbox import Sandbox, SandboxConfig\n"
        "box = Sandbox(SandboxConfig(seccomp=False, landlock=False, namespaces=False))\n"
        f"env = box.open({BENIGN!r}, 'echo.py')\n"
        "print(box._root, flush=True)\n"
        "time.sleep(60)\n"
    )
    host = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert host.stdout is not None
    root = host.stdout.readline().strip()
    assert os.path.isdir(root)
    host.send_signal(signal.SIGTERM)
    host.wait(timeout=PATIENCE_S)
    deadline = time.monotonic() + PATIENCE_S
    while os.path.exists(root) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(root), "the sandbox directory outlived its host"


FIXTURES = sorted(p.stem for p in HOSTILE.glob("*.py"))
#: Fixtures the gate accepts: hostile text, deep structures from honest code, files that read what a process shares.
VALID = {"deep_tool_call", "surrogates", "terminal_escapes", "shared_decimal_context", "shared_neighbours"}
#: Fixtures that fill host memory wherever no layer contains them: run only where one does.
CONTAINED_BY = {"memfd_fill": ("seccomp",)}
VERDICT_BUDGET_S = 2.0


@pytest.mark.parametrize("name", FIXTURES)
def test_the_gate_gives_every_fixture_a_verdict_in_bounded_time(box: Sandbox, name: str) -> None:
    if name in CONTAINED_BY:
        require(box, *CONTAINED_BY[name], attack=name)
    config = ValidationConfig(verdict_budget_s=VERDICT_BUDGET_S, random_episodes=8, sandbox=box.config)
    started = time.perf_counter()
    try:
        verdict = validate_source(fixture_source(name), f"{name}.py", sandbox=box, config=config)
    finally:
        _remove_sysv(SYSV_KEY)  # the process tier leaves SysV objects behind
    assert time.perf_counter() - started < VERDICT_BUDGET_S + PATIENCE_S
    assert verdict.valid == (name in VALID), verdict.feedback()
    text = json.dumps(verdict.to_dict(), ensure_ascii=False)
    text.encode("utf-8")  # storable
    assert "\x1b" not in text
    still_works(box)


@pytest.mark.parametrize(("name", "ends"), [("huge_max_turns", "truncated"), ("big_observations", "too_large"),
                                            ("slow_steps", "timeout")])
def test_play_ends_every_episode_of_an_unbounded_file(name: str, ends: str) -> None:
    config = SandboxConfig(**{**LIMITS, "step_timeout_s": 0.6}, episode_budget_s=1.5, max_episode_turns=200,
                           seccomp=False, landlock=False, namespaces=False)
    started = time.perf_counter()
    (episode,) = asyncio.run(play_file(HOSTILE / f"{name}.py", make_agent("random"), sandbox_config=config))
    assert time.perf_counter() - started < PATIENCE_S
    if ends == "truncated":
        assert episode.failure is None and episode.truncated and len(episode.turns) == 200
    else:
        assert episode.failure == ends, episode.failure_message
    json.dumps(episode.to_dict())  # what the store keeps can be serialised
