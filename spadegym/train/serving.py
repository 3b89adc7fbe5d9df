"""A policy's generation on vLLM servers (``train.generation = "vllm"``): started on first use, fed the weights.

``Serving`` starts the server for the policy's model (or uses ``train.vllm_urls``)
when the policy first samples, pushes the trained weights to every server
before the first sample after an update or a resume (so the servers always
sample the weights the trainer holds), and stops the server it started with the
policy, at exit, or with this process however it ends.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import UserError
from .models import quiet_progress
from .vllm_sampler import VLLMSampler
from .vllm_server import VLLMServer, free_port, server_command, server_environment, vllm_python


class Serving:
    """The servers one policy samples on, and the weights they hold."""

    def __init__(self, policy: Any, dtype: str):
        self.policy, self.dtype = policy, dtype  # the policy (``Policy``) whose model and weights are served
        self.config = policy.config
        self.server: VLLMServer | None = None
        self.sampler: VLLMSampler | None = None
        self.version = 0  # the trainer's weights: one more after every update and every checkpoint loaded
        self.served = 0  # the version the servers hold (they start on the model's own weights)
        self.seconds_last = 0.0
        self.pushes = 0
        root = self.config.vllm_weights_dir
        self.weights_dir = Path(root) if root else Path(tempfile.mkdtemp(prefix="spadegym-weights-"))
        self._own_dir = root is None
        atexit.register(self.close)

    def weights_changed(self) -> None:
        self.version += 1

    def generate(self, prompts: Sequence[list[int]], max_new_tokens: int, greedy: bool,
                 ) -> list[tuple[list[int], list[float]]]:
        import torch

        sampler = self._ready()
        # Seeds from the policy's random stream: a run, and each evaluation stream, samples reproducibly.
        seeds = torch.randint(0, 2 ** 31 - 1, (len(prompts),)).tolist()
        started = time.perf_counter()
        out = sampler.generate(prompts, max_new_tokens, seeds, greedy)
        self.seconds_last = time.perf_counter() - started
        return out

    def _ready(self) -> VLLMSampler:
        if self.sampler is None:
            self.sampler = VLLMSampler(self._urls(), eos_id=self.policy.chat.eos_id,
                                       temperature=self.config.temperature, seeded=self.policy.device != "cpu",
                                       vocab_size=self.policy.model.get_input_embeddings().num_embeddings)
        if self.served != self.version:
            self.push()
        return self.sampler

    def _urls(self) -> list[str]:
        if self.config.vllm_urls:
            return list(self.config.vllm_urls)
        source = self.policy.source
        if not source or not Path(source).is_dir():
            raise UserError(f"train.generation = 'vllm' serves a model folder, and {source or 'this policy'} is not "
                            "one; convert the model to a Hugging Face folder (spadegym models prepare) or sample with "
                            "train.generation = 'transformers'.")
        tied = getattr(self.policy.model.config, "tie_word_embeddings", False)
        if self.policy.device == "cpu" and not self.config.lora and tied:
            raise UserError("train.generation = 'vllm' with full fine-tuning of a model with tied embeddings needs a "
                            "GPU (vLLM's CPU build does not reload a tied output head in place); set train.lora = true.")
        port = free_port()
        command = server_command(vllm_python(self.config.vllm_python), source, port, dtype=self.dtype,
                                 max_model_len=self.config.max_seq_len + self.config.designer_max_new_tokens,
                                 seed=self.policy.seed, lora_rank=self.config.lora_r if self.config.lora else None,
                                 cpu=self.policy.device == "cpu", extra=self.config.vllm_args)
        self.server = VLLMServer(command, server_environment(self.config.threads, cpu=self.policy.device == "cpu"), port)
        self.server.start(self.config.vllm_start_timeout_s)
        return [self.server.url]

    def push(self) -> None:
        """Save the trainer's weights (the adapter with LoRA) and have every server load them in place."""
        policy = self.policy
        policy._unfold_adapter()
        folder = self.weights_dir / f"v{self.version:06d}"
        with quiet_progress():
            policy.model.save_pretrained(folder)
        if self.config.lora:
            self.sampler.load_adapter(str(folder))
        else:
            self.sampler.reload_weights(str(folder))
        for old in self.weights_dir.glob("v*"):  # the servers have read the new folder; older ones are done
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
        self.served = self.version
        self.pushes += 1

    def close(self) -> None:
        if self.sampler is not None:
            if self.server is None and self._own_dir:
                # Servers the user started outlive the run: they read an adapter's folder again when they need it, and
                # a vLLM engine that finds it gone stops for good, so they go back to their base model first.
                try:
                    self.sampler.unload_adapter()
                except UserError:
                    pass  # a server that is gone or refuses holds nothing of this run's to forget
            self.sampler.close()
            self.sampler = None
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.served = 0  # a server started later begins on the model's own weights
        if self._own_dir:
            shutil.rmtree(self.weights_dir, ignore_errors=True)
