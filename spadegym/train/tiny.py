"""A tiny chat model made on the spot (no download): for tests and quick trials of the training path.

``tiny_model()`` trains a byte-level BPE tokenizer on a few lines of text,
gives it a ChatML template and builds a two-layer Llama from a config, so the
whole GRPO path (sampling, masking, TRL's loss, checkpoints) runs in seconds
on a CPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .models import quiet_progress

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

_CORPUS = [
    "You are playing a text-based game. Reply with one action inside \\boxed{}.",
    "game: number sequence. sequence: 2, 4, 6, ? actions: say 8, say 9, say 10",
    "\\boxed{say 8} \\boxed{north} \\boxed{press 1} turn 1 of 8. Valid actions: a, b, c.",
    "import random\nclass GuessEnv:\n    def reset(self, seed=None):\n        return 'guess', {}\n",
    "def step(self, action):\n        return 'ok', 1.0, True, False, {}\nSKILL = 'Logical Deduction'",
    "hint: halve the range. Correct! higher lower wrong right 0123456789",
]


def tiny_tokenizer(corpus: list[str] | None = None, vocab_size: int = 400) -> Any:
    """A byte-level BPE tokenizer with ChatML special tokens, trained on ``corpus`` (plus a few built-in lines)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_CORPUS * 4 + list(corpus or []), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                   unk_token="<|endoftext|>", pad_token="<|im_end|>")
    fast.chat_template = CHATML
    return fast


def tiny_model(seed: int = 0, corpus: list[str] | None = None, vocab_size: int = 400,
               hidden_size: int = 32) -> tuple[Any, Any]:
    """(model, tokenizer): a 2-layer Llama over a small BPE vocabulary, seeded (two heads of ``hidden_size / 2``:
    64 gives heads of 32, the smallest vLLM's CPU attention serves)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tiny_tokenizer(corpus, vocab_size)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32768,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config), tokenizer


def save_tiny_model(directory: str | Path, seed: int = 0, corpus: list[str] | None = None,
                    vocab_size: int = 400, hidden_size: int = 32) -> Path:
    """Write the tiny model as a Hugging Face directory (what ``hf:DIR`` loads)."""
    model, tokenizer = tiny_model(seed, corpus, vocab_size, hidden_size)
    path = Path(directory)
    with quiet_progress():
        model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
