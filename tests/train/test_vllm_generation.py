"""hf: roles sampling through a real vLLM server (``train.generation = "vllm"``): what is trained is exactly what the
server sampled, the adapter goes back to the server after every update and before the first sample of a resumed run,
and the trainer's loss is corrected by truncated importance sampling.

The server tests start one vLLM server for the module (``$SPADEGYM_VLLM_PYTHON``, which ``scripts/setup-tests`` sets up)
and skip without it; the runs reach it through ``train.vllm_urls``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")

from spadegym.errors import UserError  # noqa: E402
from spadegym.loop.config import validate_config  # noqa: E402
from spadegym.loop.run import run  # noqa: E402
from spadegym.store import RunStore, StoreError  # noqa: E402
from spadegym.train import Policy, Sample, Trace, TrainConfig  # noqa: E402
from spadegym.train.policy import importance_weights  # noqa: E402
from spadegym.train.serving import Serving  # noqa: E402
from spadegym.train.vllm_sampler import VLLMSampler  # noqa: E402
from spadegym.train.vllm_server import (  # noqa: E402
    PYTHON_VARIABLE,
    server_command,
    server_environment,
    vllm_python,
)

LORA_RANK = 16
#: Two tries at five doors: a random reply wins about a third of the plays, and a lost first try makes a second turn.
DOORS_ENV = textwrap.dedent('''\
    import random

    SKILL = "Logical Deduction"


    class DoorsEnv:
        max_turns = 2

        def reset(self, seed=None):
            self.prize, self.tries = random.Random(seed).choice("abcde"), 0
            return "Five doors: a, b, c, d and e. One hides a prize. Reply with \\\\boxed{a} or another door.", {}

        def step(self, action):
            self.tries += 1
            if action.strip().lower() == self.prize:
                return "You found the prize.", 1.0, True, False, {}
            return "Empty. Pick again.", 0.0, self.tries >= 2, False, {}

        def valid_actions(self):
            return ["a", "b", "c", "d", "e"]

        def solution(self):
            return [self.prize]
''')
MAX_LEN = 8192  # the tiny tokenizer spends several hundred tokens on a game's observation
needs_vllm = pytest.mark.skipif(not os.environ.get(PYTHON_VARIABLE),
                                reason=f"{PYTHON_VARIABLE} names no Python with vLLM (scripts/setup-tests sets one up)")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, family_corpus):
    """The tiny Llama with heads of 32, the smallest vLLM's CPU attention serves."""
    from spadegym.train.tiny import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("vllm") / "model", seed=0, corpus=family_corpus,
                           vocab_size=1000, hidden_size=64)


@pytest.fixture(scope="module")
def server(model_dir):
    """One vLLM server on the CPU for the module, with runtime LoRA updates on: the one a policy without
    ``train.vllm_urls`` starts for itself on first use (a run's default), which the tests then use as a user's
    server. One start serves the module, since each start of vLLM costs most of a minute of CPU."""
    owner = Policy.from_path(model_dir, train_config(None, max_seq_len=MAX_LEN - 64, designer_max_new_tokens=64),
                             seed=0)
    owner.generate([[1, 2, 3]], 1)  # the first sample starts the server: base model, float32, LoRA rank LORA_RANK
    started = owner.serving.server
    assert started is not None and started.command[started.command.index("--max-model-len") + 1] == str(MAX_LEN)
    yield started.url
    process = started.process
    owner.close()  # the policy stops the server it started
    assert started.process is None and process.poll() is not None


def train_config(url: str | None, **extra) -> TrainConfig:
    return TrainConfig(generation="vllm", vllm_urls=[url] if url else [], lora=True, lora_r=LORA_RANK, lora_alpha=32,
                       device="cpu", lr=5e-3, max_new_tokens=8, threads=1, **extra)


def trainer_logprobs(policy: Policy, ids: list[int], start: int) -> list[float]:
    """The trainer's log-probabilities of ``ids[start:]``."""
    n = len(ids) - start
    batch = policy.batch([Sample(Trace(ids[:start], ids[start:], [1] * n, [0.0] * n), 0.0, "agent")])
    with torch.no_grad():
        return policy.logprobs_of(batch)[0].tolist()


# -- without a server ---------------------------------------------------------------------------------------------


def test_truncated_importance_weights_and_the_mismatch_they_report():
    ones = torch.ones((1, 4), dtype=torch.long)
    batch = {"completion_mask": ones, "tool_mask": torch.tensor([[1, 1, 1, 0]]),
             "old_per_token_logps": torch.tensor([[-1.0, -1.0, -1.0, -9.0]]),
             "sampling_per_token_logps": torch.tensor([[-1.0, -1.5, -3.0, 0.0]])}
    stats = importance_weights([batch], cap=3.0)
    ratio = batch["importance_sampling_ratio"][0].tolist()
    assert ratio[0] == pytest.approx(1.0) and ratio[1] == pytest.approx(2.718282 ** 0.5, rel=1e-4)
    assert ratio[2] == pytest.approx(3.0)  # e^2 truncated at the cap
    assert ratio[3] == pytest.approx(1.0)  # an environment token carries no weight change
    assert stats["is_logratio_max"] == pytest.approx(2.0) and stats["is_logratio_mean"] == pytest.approx(2.5 / 3)
    assert stats["is_truncated"] == pytest.approx(1 / 3)


def test_a_python_without_vllm_is_one_sentence(tmp_path):
    with pytest.raises(UserError, match=r"needs vLLM, which .* cannot import; install vLLM in a virtual environment"):
        vllm_python(sys.executable if _no_vllm_here() else "/nonexistent/python")


def test_the_server_reports_logprobs_after_temperature_and_runs_offline():
    command = server_command("py", "/m", 8000, dtype="float32", max_model_len=64, seed=0, lora_rank=8, cpu=True,
                             extra=["--enforce-eager"])
    assert command[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert "processed_logprobs" in command and "--enable-lora" in command and command[-1] == "--enforce-eager"
    env = server_environment(threads=1, cpu=True)
    assert env["HF_HUB_OFFLINE"] == "1" and env["VLLM_NO_USAGE_STATS"] == "1" and env["DO_NOT_TRACK"] == "1"
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True" and env["OMP_NUM_THREADS"] == "1"
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1"  # a fixed cache, so a CPU server starts beside other work


def test_full_fine_tuning_of_tied_weights_on_a_cpu_is_one_sentence(tiny_dir):
    policy = Policy.from_path(tiny_dir, TrainConfig(generation="vllm", device="cpu"))
    with pytest.raises(UserError, match="needs a GPU .* set train.lora = true"):
        policy.generate([[1, 2, 3]], 2)
    policy.close()


STUBBORN_SERVER = textwrap.dedent('''\
    import http.server, signal, sys
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a server that does not stop when asked to

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
''')


def test_a_started_server_ends_when_the_process_that_started_it_is_killed(tmp_path):
    starter = textwrap.dedent(f'''\
        import sys, time
        from spadegym.train.vllm_server import VLLMServer, free_port
        port = free_port()
        server = VLLMServer([sys.executable, "-c", {STUBBORN_SERVER!r}, str(port)], {{}}, port).start(timeout_s=60)
        print(server.process.pid, flush=True)
        time.sleep(600)
    ''')
    parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.1)
    assert not _alive(child), "the server outlived the process that started it"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def replies(mask: list[int]) -> int:
    """The sampled stretches of a trace: its turns."""
    return sum(1 for i, m in enumerate(mask) if m == 1 and (i == 0 or mask[i - 1] == 0))


def _no_vllm_here() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is None


# -- with a server -------------------------------------------------------------------------------------------------


@needs_vllm
def test_samples_are_the_servers_ids_and_the_adapter_follows_every_update(server, model_dir):
    policy = Policy.from_path(model_dir, train_config(server), seed=0)
    prompt = policy.chat.prompt([{"role": "user", "content": "say 8"}])
    out = policy.generate([prompt] * 4, 8)
    assert len({tuple(ids) for ids, _ in out}) > 1  # a group repeating one prompt gets different samples
    # The ids are the server's own: its log-probabilities of them are the trainer's (float32, same weights).
    for ids, logprobs in out:
        assert trainer_logprobs(policy, prompt + ids, len(prompt)) == pytest.approx(logprobs, abs=1e-3)
    probe = prompt + out[0][0]
    sampler = policy.serving.sampler
    before = sampler.prompt_logprobs(probe)
    for step in range(2):
        samples = []
        for i, (ids, logprobs) in enumerate(out):
            trace = Trace(list(prompt))
            trace.add_sampled(ids, logprobs)
            samples.append(Sample(trace, 1.0 if i % 2 else -1.0, "agent"))
        stats = policy.update(samples)
        assert stats["is_logratio_max"] < 1e-3 and stats["is_truncated"] == 0.0  # sampled with the trainer's weights
        out = policy.generate([prompt] * 4, 8)  # pushes the adapter first
        assert policy.serving.pushes == step + 1 and sampler.model == "policy"
        after = sampler.prompt_logprobs(probe)
        assert max(abs(a - b) for a, b in zip(before, after)) > 1e-3  # the served model moved with training
        assert trainer_logprobs(policy, probe, 1) == pytest.approx(after, abs=1e-3)  # ... to the trainer's weights
        before = after
    policy.close()
    # The user's server outlives the policy on its base model: the adapter's folder went with the policy, and a vLLM
    # engine asked for an adapter whose folder is gone stops for good.
    import httpx

    assert [m["id"] for m in httpx.get(f"{server}/v1/models", timeout=30).json()["data"]] == ["base"]


@needs_vllm
def test_a_selfplay_run_trains_on_what_the_server_sampled_and_resumes_after_a_kill(server, model_dir, tmp_path,
                                                                                     monkeypatch):
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "doors.py").write_text(DOORS_ENV)
    cfg = validate_config({
        "agent": f"hf:{model_dir}", "designer": "pool", "pool": {"path": str(pool)}, "rounds": 2, "seed": 0,
        "skills": ["Logical Deduction"], "envs_per_round": 1, "plays": 8, "hint_plays": 0, "group_size": 8,
        "heldout": {"every": 0, "levels": "easiest", "families": ["number_sequence"], "seeds": 2, "hint": False},
        "train": {**train_config(server).model_dump(), "max_new_tokens": 6, "action_rule": "forgiving",
                  "max_seq_len": MAX_LEN},
        "tensorboard": False})
    out = tmp_path / "run"
    cfg_file = tmp_path / "run.json"
    cfg_file.write_text(cfg.model_dump_json())
    log = tmp_path / "first.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "spadegym", "run", "--config", str(cfg_file), "--out", str(out)],
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with RunStore.open(out) as store:
                    if store.last_complete_round() is not None:
                        break
            except StoreError:  # not made yet, or its tables not written yet
                pass
            time.sleep(0.5)
        assert proc.poll() is None, log.read_text()[-2000:]
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    with RunStore.open(out) as store:
        assert store.last_complete_round() == 0

    # The resumed run: every request and reply the server saw, every push, and every sample trained.
    sent, events, trained = [], [], []
    complete, push, update = VLLMSampler._complete, Serving.push, Policy.update

    def recording_complete(self, url, prompt, *args):
        ids, logprobs = complete(self, url, prompt, *args)
        sent.append((list(prompt), ids, logprobs))
        events.append(("sample", self.model))
        return ids, logprobs

    def recording_push(self):
        push(self)
        events.append(("push", self.version))
        probe = self.policy.chat.prompt([{"role": "user", "content": "a"}]) + [5, 6, 7]
        events.append(("match", trainer_logprobs(self.policy, probe, 1), self.sampler.prompt_logprobs(probe)))

    def recording_update(self, samples):
        trained.extend(samples)
        return update(self, samples)

    monkeypatch.setattr(VLLMSampler, "_complete", recording_complete)
    monkeypatch.setattr(Serving, "push", recording_push)
    monkeypatch.setattr(Policy, "update", recording_update)
    # Resumed as a user resumes with the server still up: the server is a safety setting, never the store's.
    result = run(resume=out, settings={"train": {"vllm_urls": [server]}}, report=True)
    assert result.rounds == 2
    assert "Sampler-trainer mismatch (vLLM)" in result.report.read_text()  # the report plots it per round
    # The checkpoint's adapter reached the server before its first sample, and it is the trainer's.
    assert events[0][0] == "push" and events[0][1] >= 1 and events[2] == ("sample", "policy")
    _, mine, served = events[1]
    assert mine == pytest.approx(served, abs=1e-3)
    # Every trained episode is built from the server's ids and log-probs, turn after turn.
    assert trained and sent and any(replies(s.trace.mask) == 2 for s in trained)  # lost first tries: two turns
    for sample in trained:
        ids, sampled = sample.trace.ids(), sample.trace.completion
        matched = [(p, r, lp) for p, r, lp in sent if ids[:len(p) + len(r)] == p + r and len(p) < len(ids)]
        assert matched, "a trained episode holds tokens the server did not return"
        for p, r, lp in matched:
            at = len(p) - len(sample.trace.prompt)
            assert sampled[at:at + len(r)] == r and sample.trace.logprobs[at:at + len(r)] == lp
            assert sample.trace.mask[at:at + len(r)] == [1] * len(r)
    # Every push left the server with the trainer's weights; every update reported the mismatch.
    assert all(mine == pytest.approx(served, abs=1e-3) for kind, mine, served in
               (e for e in events if e[0] == "match"))
    with RunStore.open(out) as store:
        stepped = [r["learner"] for r in store.rounds() if "agent_updates" in r["learner"]]
    assert stepped and all(r["agent_is_logratio_max"] < 1e-3 for r in stepped)
    # The user's server outlives the run and still answers on its base model.
    import httpx

    answer = httpx.post(f"{server}/v1/completions", timeout=120,
                        json={"model": "base", "prompt": [1, 2, 3], "max_tokens": 2}).json()
    assert answer["choices"][0]["text"] is not None
