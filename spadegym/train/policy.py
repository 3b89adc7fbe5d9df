"""One local model that samples and learns: generation, GRPO updates through TRL, checkpoints.

The loop owns the rounds: it plays episodes (the agent samples through
``generate``), scores them, and only then hands the finished sequences with
their advantages to ``update``. So the trainer is used through its step API:
a ``GRPOTrainer`` is built once around the model, and ``update`` feeds it
batches in the layout its loss reads (``prompt_ids``, ``completion_ids``,
masks, ``advantages``), calls ``trainer.compute_loss`` (TRL's GRPO loss:
clipped ratios, ``loss_type`` aggregation, optional KL) and steps the
trainer's optimizer. ``trainer.train()`` is never called: it would own the
generation loop, and with it the rounds. Every part of the trainer this reaches
is reached through ``grpo_loss.GRPOLoss``.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
import warnings
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from .config import TrainConfig
from .constrained import ConstrainedRows, TokenConstraint
from .grpo_loss import GRPOLoss
from .kvcache import Batch, Prefix, PrefixCache, common_prefix, reusable
from .models import quiet_progress
from .sampled import CountTokens
from .serving import Serving
from .tokens import ChatTokens, Sample

STATE_FILE = "policy.json"
MIN_SHARED = 16  # tokens a beginning must save to be encoded once for several rows
OPTIMIZER_FILE = "optimizer.pt"
RNG_FILE = "rng.json"
#: Where spadegym wrote the random state with pickle before: read only as tensors and numpy arrays, never code.
LEGACY_RNG_FILE = "rng.pt"


class Policy:
    """A causal LM with its tokenizer, a TRL GRPO trainer around it, and the sampling RNG."""

    def __init__(self, model: Any, tokenizer: Any, config: TrainConfig | None = None, *, seed: int = 0,
                 name: str = "model", source: str | None = None):
        import torch

        self.config = config or TrainConfig()
        self.name, self.source, self.seed = name, source, seed
        self.tokenizer = tokenizer
        self.chat = ChatTokens(tokenizer)
        self.device = _device(self.config.device)
        if self.config.threads:
            torch.set_num_threads(self.config.threads)
        torch.manual_seed(seed)
        if self.config.lora:
            model = _with_lora(model, self.config)
        self.model = model.to(self.device)
        self.trainer = self._build_trainer()
        if self.config.gradient_checkpointing:
            _checkpoint_activations(self.model)
        self.optimizer = self.trainer.create_optimizer()
        self.updates = 0
        self.tokens = {"sampled": 0, "trained": 0, "masked": 0}
        # Live sequences' keys and values between calls (None: every call encodes its prompts whole).
        budget = self.config.cache_mb * 2 ** 20
        remote = self.config.generation == "vllm"  # the server keeps its own cache of prefixes
        self.prefixes = PrefixCache(budget) if budget and reusable(self.model) and not remote else None
        self.serving = Serving(self, _dtype_name(self.config)) if remote else None
        self.work = {"encoded": 0, "sampled": 0, "seconds": 0.0}  # this process's generation, for progress figures
        self._saved: tuple[str, int] | None = None
        self._folded = False  # the LoRA adapter is folded into the base weights (while sampling: ``_fold_adapter``)

    @classmethod
    def from_path(cls, path: str | Path, config: TrainConfig | None = None, *, seed: int = 0) -> Policy:
        from .models import load_model

        config = config or TrainConfig()
        model, tokenizer = load_model(path, dtype=_dtype(config))
        return cls(model, tokenizer, config, seed=seed, name=Path(path).name, source=str(path))

    # -- TRL ----------------------------------------------------------------------
    def _build_trainer(self) -> GRPOLoss:
        c = self.config
        _no_hub_telemetry()
        return GRPOLoss(self.model, self.tokenizer, lr=c.lr, max_grad_norm=c.max_grad_norm, loss_type=c.loss_type,
                        epsilon=c.epsilon, epsilon_high=c.epsilon_high, beta=c.beta, epochs=c.epochs,
                        temperature=c.temperature, cpu=self.device == "cpu", bf16=_dtype_name(c) == "bfloat16",
                        seed=self.seed, gradient_checkpointing=c.gradient_checkpointing,
                        importance_sampling=c.generation == "vllm")

    # -- sampling -----------------------------------------------------------------
    def generate(self, prompts: Sequence[list[int]], max_new_tokens: int, *, keys: Sequence[Hashable] | None = None,
                 greedy: bool = False, constraints: Sequence[TokenConstraint | None] | None = None,
                 ) -> list[tuple[list[int], list[float]]]:
        """One completion per prompt: its ids (ending with EOS when the model stopped) and their log-probs.

        ``keys`` name the sequences that continue across calls (an episode's turns): a prompt that extends
        what its key's last call encoded and sampled reuses those keys and values (``kvcache``) and encodes
        only its new tokens. ``greedy`` takes the most likely token instead of sampling. ``constraints``
        (one per prompt, or None) limit what a row may write (``constrained``); log-probs stay the model's own.
        With ``train.generation = "vllm"`` the server samples (constrained rows still sample here: the grammar is ours).
        """
        if self.serving is not None and not (constraints and any(c is not None for c in constraints)):
            return self._count(self.serving.generate(prompts, max_new_tokens, greedy), [len(p) for p in prompts])
        self._fold_adapter()
        caching = keys is not None and self.prefixes is not None
        if caching:
            self.prefixes.tick()
        found = [self.prefixes.lookup(k, p) if caching else None for k, p in zip(keys or [None] * len(prompts), prompts)]
        started = time.perf_counter()
        if caching:
            self._share_beginnings(prompts, found)
        # Batches of rows with similar numbers of new tokens: every row of a batch is padded to its longest.
        new = [len(p) - (len(f.ids) if f else 0) for p, f in zip(prompts, found)]
        order = sorted(range(len(prompts)), key=lambda i: (new[i], len(prompts[i])))
        out: list[tuple[list[int], list[float]]] = [([], [])] * len(prompts)
        size = self.config.generation_batch
        for start in range(0, len(order), size):
            chunk = order[start:start + size]
            results, kept = self._generate_batch([prompts[i] for i in chunk], [found[i] for i in chunk],
                                                 max_new_tokens, greedy, keep=caching,
                                                 constraints=[constraints[i] for i in chunk] if constraints else None)
            for j, (i, result) in enumerate(zip(chunk, results)):
                out[i] = result
                if caching:
                    self.prefixes.store(keys[i], kept[j])
        return self._count(out, new, time.perf_counter() - started)

    def _count(self, out: list[tuple[list[int], list[float]]], encoded: list[int], seconds: float | None = None,
               ) -> list[tuple[list[int], list[float]]]:
        self.tokens["sampled"] += sum(len(ids) for ids, _ in out)
        self.work["encoded"] += sum(encoded)
        self.work["sampled"] += sum(len(ids) for ids, _ in out)
        self.work["seconds"] += self.serving.seconds_last if seconds is None else seconds
        return out

    def close(self) -> None:
        """Stop the generation server this policy started (if any)."""
        if self.serving is not None:
            self.serving.close()

    def measure_rate(self, rows: int, new_tokens: int = 8) -> float:
        """Tokens per second sampled ``rows`` at a time, from a short greedy generation after a one-token warm-up;
        no counter, cached prefix or random stream changes."""
        self._fold_adapter()
        prompt = self.chat.prompt([{"role": "user", "content": "Count from one to ten."}])
        self._generate_batch([prompt], [None], 1, greedy=True, keep=False)
        started = time.perf_counter()
        out, _ = self._generate_batch([prompt] * rows, [None] * rows, new_tokens, greedy=True, keep=False)
        return sum(len(ids) for ids, _ in out) / max(time.perf_counter() - started, 1e-6)

    def forget(self, keys: Sequence[Hashable]) -> None:
        """Drop the cached prefixes of sequences that will not continue (finished episodes)."""
        if self.prefixes is not None:
            for key in keys:
                self.prefixes.drop(key)

    def _share_beginnings(self, prompts: Sequence[list[int]], found: list[Prefix | None]) -> None:
        """Rows starting fresh continue from a beginning they share, encoded once: one all of them share (kept
        for later calls: the system prompt), then the whole prompt of rows that repeat it (a GRPO group)."""
        fresh = [i for i, f in enumerate(found) if f is None]
        for i in fresh:
            found[i] = self.prefixes.shared_for(prompts[i])
        if len(fresh) > 1:
            common = prompts[fresh[0]][:common_prefix([prompts[i] for i in fresh])]
            base = self.prefixes.shared_for(common, limit=len(common))  # the longest kept beginning of `common`
            if len(common) - (len(base.ids) if base else 0) >= MIN_SHARED:
                shared = self._encode(common, base)
                self.prefixes.share(shared)
                for i in fresh:
                    if found[i] is None or len(found[i].ids) < len(common):
                        found[i] = shared
        groups: dict[tuple[int, ...], list[int]] = {}
        for i in fresh:
            groups.setdefault(tuple(prompts[i]), []).append(i)
        for rows in groups.values():
            base = found[rows[0]]
            if len(rows) > 1 and len(prompts[rows[0]]) - 1 - (len(base.ids) if base else 0) >= MIN_SHARED:
                shared = self._encode(prompts[rows[0]][:-1], base)
                for i in rows:
                    found[i] = shared

    def _encode(self, ids: list[int], base: Prefix | None) -> Prefix:
        """``ids`` as a prefix, encoded in one forward pass that continues ``base`` (a beginning of them)."""
        import torch
        from transformers import DynamicCache

        start = len(base.ids) if base else 0
        cache = DynamicCache(ddp_cache_data=[(k[None], v[None]) for k, v in base.layers]) if base else DynamicCache()
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                self.model(input_ids=torch.tensor([ids[start:]], device=self.device), cache=cache, use_cache=True,
                           logits_to_keep=1)
        finally:
            self.model.train(was_training)
        self.work["encoded"] += len(ids) - start
        return Prefix(list(ids), [(layer.keys[0], layer.values[0]) for layer in cache.layers])

    def _generate_batch(self, prompts: Sequence[list[int]], found: Sequence[Prefix | None], max_new_tokens: int,
                        greedy: bool, keep: bool, constraints: Sequence[TokenConstraint | None] | None = None,
                        ) -> tuple[list[tuple[list[int], list[float]]], list[Prefix]]:
        import torch
        from transformers import StoppingCriteriaList

        pad = self.tokenizer.pad_token_id
        batch = Batch.build(prompts, found, pad, self.device)
        model = self.model
        was_training = model.training
        model.eval()
        sampling = {"do_sample": False} if greedy else {
            "do_sample": True, "temperature": self.config.temperature, "top_k": 0, "top_p": 1.0}
        if constraints and any(c is not None for c in constraints):
            sampling["logits_processor"] = [ConstrainedRows(constraints)]
        counted = StoppingCriteriaList([CountTokens(self.chat.eos_id, batch.input_ids.shape[1])])
        try:
            with torch.no_grad():
                result = model.generate(
                    input_ids=batch.input_ids, attention_mask=batch.attention_mask, cache=batch.cache,
                    use_cache=True, max_new_tokens=max_new_tokens, pad_token_id=pad, eos_token_id=self.chat.eos_id,
                    return_dict_in_generate=True, output_logits=True, stopping_criteria=counted, **sampling)
        finally:
            model.train(was_training)
        width = batch.input_ids.shape[1]
        new = result.sequences[:, width:].cpu()
        logits = torch.stack(result.logits, dim=1).float().cpu() / self.config.temperature
        logps = torch.log_softmax(logits, dim=-1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
        out = []
        for row, lp in zip(new.tolist(), logps.tolist()):
            end = row.index(self.chat.eos_id) + 1 if self.chat.eos_id in row else len(row)
            out.append((row[:end], lp[:end]))
        kept = batch.prefixes(prompts, [ids for ids, _ in out]) if keep else []
        return out, kept

    @contextmanager
    def evaluating(self, seed: int) -> Iterator[Policy]:
        """Sample from a separate random stream; the training stream continues untouched afterwards."""
        import torch

        saved = torch.get_rng_state()
        torch.manual_seed(seed)
        try:
            yield self
        finally:
            torch.set_rng_state(saved)

    # -- learning -----------------------------------------------------------------
    def update(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """One GRPO step (``epochs`` passes) through TRL's loss on the given samples (of one role, whose loss
        aggregation it uses); returns its statistics."""
        import torch

        samples = [s for s in samples if s.trace.sampled_tokens > 0]
        if not samples or all(s.advantage == 0.0 for s in samples):
            return {"samples": len(samples), "skipped": 1}
        started = time.perf_counter()
        self._weights_change()
        trainer, model = self.trainer, self.model
        roles = {s.role for s in samples}
        if len(roles) > 1:
            raise ValueError(f"one update trains one role; got samples of {sorted(roles)}")
        order = sorted(range(len(samples)), key=lambda i: len(samples[i].trace))  # similar lengths pad less
        micro = self._micro_batches([len(samples[i].trace) for i in order], order)
        batches = [self.batch([samples[i] for i in idx]) for idx in micro]
        total = sum(int((b["completion_mask"] * b["tool_mask"]).sum()) for b in batches)
        for b in batches:
            b["num_items_in_batch"] = torch.tensor(float(total), device=self.device)
        # The trainer's loss reads its aggregation at every call: one policy, an aggregation per role.
        trainer.prepare(self.config.designer_loss_type if roles == {"designer"} else self.config.loss_type,
                        len(batches))
        model.train()
        mismatch: dict[str, float] = {}
        if self.config.epochs > 1 or self.config.beta > 0 or self.serving is not None:
            with torch.no_grad():
                for b in batches:
                    if self.config.epochs > 1 or self.serving is not None:
                        b["old_per_token_logps"] = self.logprobs_of(b)
                    if self.config.beta > 0:
                        b["ref_per_token_logps"] = self._reference_logprobs(b)
                if self.serving is not None:
                    mismatch = importance_weights(batches, self.config.importance_sampling_cap)
        losses = []
        for _ in range(self.config.epochs):
            for b in batches:
                losses.append(trainer.backward(model, b))
            grad_norm = trainer.clip_grad_norm(model.parameters(), self.config.max_grad_norm)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.updates += 1
        if self.serving is not None:
            self.serving.weights_changed()
        stats = {**self._trainer_metrics(), **mismatch}
        with torch.no_grad():  # how far the step moved the policy, measured on one micro-batch (a forward pass)
            kl = [self._kl_to_sampling(batches[-1])]
        trained = sum(s.trace.sampled_tokens for s in samples)
        masked = sum(len(s.trace.completion) - s.trace.sampled_tokens for s in samples)
        self.tokens["trained"] += trained
        self.tokens["masked"] += masked
        stats.update(samples=len(samples), loss=float(np.sum(losses)), grad_norm=float(grad_norm),
                     kl_sampling=float(np.average([k for k, _ in kl], weights=[n for _, n in kl])),
                     tokens_trained=trained, tokens_masked=masked, update_seconds=time.perf_counter() - started,
                     updates=self.updates)
        return stats

    def _weights_change(self) -> None:
        """Cached keys and values belong to the weights that computed them; the adapter trains apart."""
        self._unfold_adapter()
        if self.prefixes is not None:
            self.prefixes.clear()

    def _fold_adapter(self) -> None:
        """Sample with the LoRA adapter folded into the weights it adapts: a forward pass then costs what the base
        model's does (the adapter's own small matmuls took over a third of the linear layers' CPU time). Whatever
        trains or reads the adapter apart unfolds it first, as TRL does around handing weights to vLLM."""
        if self.config.lora and not self._folded:
            self.model.merge_adapter()
            self._folded = True

    def _unfold_adapter(self) -> None:
        if self._folded:
            self.model.unmerge_adapter()
            self._folded = False

    def _micro_batches(self, lengths: list[int], order: list[int]) -> list[list[int]]:
        """Consecutive groups (by length) of at most ``micro_batch`` sequences and ``micro_batch_tokens`` padded tokens."""
        groups: list[list[int]] = [[]]
        for length, i in zip(lengths, order):
            group = groups[-1]
            if group and (len(group) >= self.config.micro_batch or
                          (len(group) + 1) * length > self.config.micro_batch_tokens):
                groups.append(group := [])
            group.append(i)
        return groups

    def batch(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """Samples in the layout TRL's GRPO loss reads (prompts left-padded, completions right-padded)."""
        import torch

        pad = self.tokenizer.pad_token_id
        p_width = max(len(s.trace.prompt) for s in samples)
        c_width = max(len(s.trace.completion) for s in samples)
        n = len(samples)
        prompt_ids = torch.full((n, p_width), pad, dtype=torch.long)
        prompt_mask = torch.zeros((n, p_width), dtype=torch.long)
        completion_ids = torch.full((n, c_width), pad, dtype=torch.long)
        completion_mask = torch.zeros((n, c_width), dtype=torch.long)
        tool_mask = torch.zeros((n, c_width), dtype=torch.long)
        sampling = torch.zeros((n, c_width), dtype=torch.float32)
        for i, s in enumerate(samples):
            t = s.trace
            prompt_ids[i, p_width - len(t.prompt):] = torch.tensor(t.prompt)
            prompt_mask[i, p_width - len(t.prompt):] = 1
            k = len(t.completion)
            completion_ids[i, :k] = torch.tensor(t.completion)
            completion_mask[i, :k] = 1
            tool_mask[i, :k] = torch.tensor(t.mask)
            sampling[i, :k] = torch.tensor(t.logprobs)
        d = self.device
        return {"prompt_ids": prompt_ids.to(d), "prompt_mask": prompt_mask.to(d),
                "completion_ids": completion_ids.to(d), "completion_mask": completion_mask.to(d),
                "tool_mask": tool_mask.to(d), "sampling_per_token_logps": sampling.to(d),
                "advantages": torch.tensor([s.advantage for s in samples], dtype=torch.float32, device=d)}

    def logprobs_of(self, batch: dict[str, Any]) -> Any:
        """The trainer's per-token log-probabilities of a batch's completions (what its loss uses)."""
        import torch

        self._unfold_adapter()

        input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        return self.trainer.token_logprobs(self.model, input_ids, attention, batch["completion_ids"].size(1))

    def _reference_logprobs(self, batch: dict[str, Any]) -> Any:
        ref = self.trainer.reference_model
        self._unfold_adapter()
        if ref is None and self.config.lora:
            with self.model.disable_adapter():
                return self.logprobs_of(batch)
        if ref is None:
            raise UserError("train.beta > 0 needs a reference model: load the policy from a model directory "
                            "or set train.lora = true.")
        import torch

        input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        return self.trainer.token_logprobs(ref, input_ids, attention, batch["completion_ids"].size(1))

    def _kl_to_sampling(self, batch: dict[str, Any]) -> tuple[float, int]:
        """Mean k3 estimate of KL(sampling policy || updated policy) over trained tokens, and their count."""
        import torch

        new = self.logprobs_of(batch)
        mask = (batch["completion_mask"] * batch["tool_mask"]).float()
        delta = new - batch["sampling_per_token_logps"]
        k3 = torch.exp(delta) - delta - 1
        count = int(mask.sum())
        return (float((k3 * mask).sum() / max(count, 1)), count)

    def _trainer_metrics(self) -> dict[str, float]:
        """TRL's logged metrics of this update (entropy, clip ratios, KL), averaged, then cleared."""
        out = {}
        for key, values in self.trainer.take_metrics().items():
            finite = [v for v in values if v is not None and not math.isnan(v)]
            if finite and key.split("/")[0] in ("entropy", "clip_ratio", "kl", "policy_loss"):
                out[key.replace("/", "_")] = float(np.mean(finite))
        return out

    # -- checkpoints ----------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Weights (or the LoRA adapter), optimizer and RNG state; saving twice after one update is a no-op."""
        import torch

        path = Path(directory)
        if self._saved == (str(path.resolve()), self.updates) and (path / STATE_FILE).is_file():
            return path
        path.mkdir(parents=True, exist_ok=True)
        with quiet_progress():
            self.model.save_pretrained(path / "weights")
        torch.save(self.optimizer.state_dict(), path / OPTIMIZER_FILE)
        (path / RNG_FILE).write_text(json.dumps(_rng_state()))
        state = {"name": self.name, "source": self.source, "updates": self.updates, "tokens": self.tokens,
                 "lora": self.config.lora, "config": self.config.model_dump()}
        (path / STATE_FILE).write_text(json.dumps(state, indent=2))
        self._saved = (str(path.resolve()), self.updates)
        return path

    def load(self, directory: str | Path) -> None:
        """Continue from a checkpoint ``save`` wrote (same base model and settings)."""
        path = Path(directory)
        self._weights_change()
        if not (path / STATE_FILE).is_file():
            raise UserError(f"{path} holds no policy checkpoint ({STATE_FILE} missing); resume from a run directory.")
        state = json.loads((path / STATE_FILE).read_text())
        if bool(state.get("lora")) != self.config.lora:
            raise UserError(f"the checkpoint in {path} was trained with lora={state.get('lora')}; "
                            f"set train.lora to match.")
        weights = path / "weights"
        if self.config.lora:
            from peft import set_peft_model_state_dict
            from peft.utils import load_peft_weights

            set_peft_model_state_dict(self.model, load_peft_weights(str(weights), device=self.device))
        else:
            from safetensors.torch import load_file

            tensors: dict[str, Any] = {}
            for f in sorted(weights.glob("*.safetensors")):
                tensors.update(load_file(f, device=self.device))
            missing, unexpected = self.model.load_state_dict(tensors, strict=False)
            if unexpected or [k for k in missing if "lm_head" not in k]:  # tied heads are saved once
                raise UserError(f"the checkpoint in {path} does not fit this model; resume with the same model path.")
            if getattr(self.model.config, "tie_word_embeddings", False):
                self.model.tie_weights()
        self.optimizer.load_state_dict(_load_tensors(path / OPTIMIZER_FILE, self.device))
        _restore_rng(path)
        self.updates = int(state.get("updates", 0))
        self.tokens = dict(state.get("tokens", self.tokens))
        if self.serving is not None:  # the servers sample the checkpoint's weights from the first sample on
            self.serving.weights_changed()


# A checkpoint is data: it loads without pickle's code execution (torch.load with weights_only=True, plain JSON),
# so a crafted one is one sentence, never code run in this process.


def _load_tensors(file: Path, device: Any = "cpu") -> Any:
    """A torch file holding tensors and plain containers only (``weights_only``), or one sentence."""
    import pickle

    import torch

    try:
        return torch.load(file, map_location=device, weights_only=True)
    except pickle.UnpicklingError:
        why = "it holds objects other than tensors and plain values"
    except (OSError, RuntimeError, ValueError, EOFError) as exc:
        why = _first_line(exc)
    raise UserError(f"{file} is not a checkpoint file spadegym can read without running code in it ({why}); "
                    "resume from a checkpoint spadegym wrote.")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160].rstrip(".")


def _rng_state() -> dict[str, Any]:
    """torch's, Python's and numpy's random state as plain JSON."""
    import torch

    version, mt, gauss = random.getstate()
    legacy = np.random.get_state(legacy=False)
    return {"torch": torch.get_rng_state().tolist(), "python": [version, list(mt), gauss],
            "numpy": {"key": legacy["state"]["key"].tolist(), "pos": legacy["state"]["pos"],
                      "has_gauss": legacy["has_gauss"], "gauss": legacy["gauss"]}}


def _restore_rng(path: Path) -> None:
    """Set the random state a checkpoint holds (rng.json, or an older checkpoint's rng.pt), or one sentence."""
    from ..jsondata import UntrustedJSONError, loads

    file = path / RNG_FILE
    try:
        state = loads(file.read_bytes(), str(file), max_bytes=1 << 20) if file.is_file() else _legacy_rng(path)
        _set_rng(state)
    except (UntrustedJSONError, TypeError, ValueError, KeyError, IndexError, RuntimeError, OverflowError) as exc:
        raise UserError(f"the random state in {path} is not one spadegym wrote ({_first_line(exc)}); resume from a "
                        "checkpoint spadegym wrote.") from None


def _legacy_rng(path: Path) -> dict[str, Any]:
    """An older checkpoint's rng.pt, read as tensors and numpy arrays only (no object arrays), as rng.json holds it."""
    import torch

    numpy_array = (getattr(np, "_core", None) or np.core).multiarray._reconstruct
    with torch.serialization.safe_globals([numpy_array, np.ndarray, np.dtype, type(np.dtype(np.uint32))]):
        rng = _load_tensors(path / LEGACY_RNG_FILE)
    name, key, pos, has_gauss, gauss = rng["numpy"]
    if not isinstance(key, np.ndarray) or key.dtype != np.uint32:
        raise ValueError("its numpy state is not an array of 32-bit integers")
    version, mt, python_gauss = rng["python"]
    return {"torch": rng["torch"].tolist(), "python": [version, list(mt), python_gauss],
            "numpy": {"key": key.tolist(), "pos": pos, "has_gauss": has_gauss, "gauss": gauss}}


def _set_rng(state: dict[str, Any]) -> None:
    import torch

    version, mt, gauss = state["python"]
    numpy = state["numpy"]
    key = np.asarray(numpy["key"], dtype=np.int64)
    if key.shape != (624,) or key.min() < 0 or key.max() >= 1 << 32:
        raise ValueError("its numpy state is not 624 32-bit integers")
    torch_state = torch.tensor(state["torch"], dtype=torch.int64)
    if torch_state.min() < 0 or torch_state.max() > 255:
        raise ValueError("its torch state is not bytes")
    torch.set_rng_state(torch_state.to(torch.uint8))
    random.setstate((int(version), tuple(int(n) for n in mt), None if gauss is None else float(gauss)))
    np.random.set_state({"bit_generator": "MT19937", "state": {"key": key.astype(np.uint32), "pos": int(numpy["pos"])},
                         "has_gauss": int(numpy["has_gauss"]), "gauss": float(numpy["gauss"])})


def importance_weights(batches: Sequence[dict[str, Any]], cap: float) -> dict[str, float]:
    """TRL's truncated importance sampling for a separate sampler: each trained token's loss is weighed by
    min(p_trainer / p_sampler, cap) (``importance_sampling_ratio``, which the trainer's loss reads); returns the
    sampler-trainer mismatch over trained tokens (mean and largest |log-ratio|, mean weight, share truncated)."""
    import torch

    diffs = []
    for b in batches:
        mask = (b["completion_mask"] * b["tool_mask"]).bool()
        diff = (b["old_per_token_logps"] - b["sampling_per_token_logps"]).masked_fill(~mask, 0.0)
        b["importance_sampling_ratio"] = torch.clamp(torch.exp(diff), max=cap)
        diffs.append(diff[mask].float().cpu())
    diff = torch.cat(diffs)
    if diff.numel() == 0:
        return {}
    weight = torch.exp(diff)
    return {"is_logratio_mean": float(diff.abs().mean()), "is_logratio_max": float(diff.abs().max()),
            "is_weight_mean": float(torch.clamp(weight, max=cap).mean()),
            "is_truncated": float((weight > cap).float().mean())}


def _checkpoint_activations(model: Any) -> None:
    """Recompute activations in the backward pass. The Trainer turns this on inside ``train()``, which the loop never
    calls, so the policy does it; non-reentrant, so a LoRA model needs no gradient on its inputs."""
    enable = getattr(model, "activation_checkpointing_enable", None)  # the name transformers 5 moves to
    if enable is not None:
        enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def _device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("train.device = 'cuda' but torch sees no GPU; use 'cpu' or 'auto'.")
    return name


def _dtype_name(config: TrainConfig) -> str:
    if config.dtype != "auto":
        return config.dtype
    return "bfloat16" if _device(config.device) == "cuda" else "float32"


def _dtype(config: TrainConfig) -> Any:
    import torch

    return getattr(torch, _dtype_name(config))


def _with_lora(model: Any, config: TrainConfig) -> Any:
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, target_modules="all-linear",
                      task_type="CAUSAL_LM", lora_dropout=0.0)
    with warnings.catch_warnings():  # peft still reads the name transformers 5 deprecated; nothing for a user to do
        warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning)
        return get_peft_model(model, lora)


def _no_hub_telemetry() -> None:
    """A run contacts only the hosts its config names: the trainer's usage ping to the Hugging Face Hub stays off
    unless the user set ``HF_HUB_DISABLE_TELEMETRY`` themselves (the hub reads the variable once, at import)."""
    if "HF_HUB_DISABLE_TELEMETRY" not in os.environ:
        from huggingface_hub import constants

        constants.HF_HUB_DISABLE_TELEMETRY = True
