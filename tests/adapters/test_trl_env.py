"""TRL environment mode: the real GRPOTrainer plays spadegym levels through the factory and the dataset.

The model is made here: a one-layer Qwen2 whose layer is switched off and whose
output head maps each token to the next one of a fixed tool call, so that
generation is a real, deterministic tool call of ``act`` (no download, a
second of CPU). TRL parses it, calls the environment's tool, and scores the
rollout with ``get_reward``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

trl = pytest.importorskip("trl", reason="the train extra (trl) is not installed")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from spadegym.adapters import PoolLevels  # noqa: E402
from spadegym.adapters.trl_env import SpadegymToolEnv, environment_factory, level_dataset  # noqa: E402

LEVEL = '''
class DoorEnv:
    max_turns = 4

    def reset(self, seed=None):
        return "A door. Actions: go, wait.", {}

    def step(self, action):
        won = action == "go"
        return ("You are through." if won else "Nothing happens."), float(won), won, False, {}
'''
CALL = "\n" + json.dumps({"name": "act", "arguments": {"action": "go"}}) + "\n"


def tiny_tool_caller():
    """A byte-level tokenizer with Qwen 2.5's chat template and a model that always calls act(action="go")."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    core = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(sorted(byte_chars))}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, padding_side="left")
    tokenizer.add_special_tokens({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                                  "additional_special_tokens": ["<|im_start|>"]})
    tokenizer.add_tokens(["<tool_call>", "</tool_call>", CALL])
    template = Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja"
    tokenizer.chat_template = template.read_text()

    vocab = len(tokenizer)
    hidden = (vocab + 7) // 8 * 8
    config = Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=8, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=False,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model = Qwen2ForCausalLM(config)
    ids = tokenizer.convert_tokens_to_ids
    chain = [ids("Ċ"), ids("<tool_call>"), ids(CALL), ids("</tool_call>"), tokenizer.eos_token_id]
    with torch.no_grad():
        layer = model.model.layers[0]
        layer.self_attn.o_proj.weight.zero_()  # the layer adds nothing: the head reads the token itself
        layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.copy_(torch.eye(vocab, hidden))
        model.lm_head.weight.zero_()
        for current, following in zip(chain, chain[1:]):
            model.lm_head.weight[following, current] = 50.0
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


@pytest.fixture(autouse=True)
def offline_user(monkeypatch) -> None:
    """These tests build the user's own TRL trainer, whose usage ping to the Hub is TRL's: this user turned it off."""
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_DISABLE_TELEMETRY", True)


def test_grpo_trainer_plays_levels_through_the_factory_and_learns_from_their_return(tmp_path: Path) -> None:
    (tmp_path / "door.py").write_text(LEVEL)
    model, tokenizer = tiny_tool_caller()
    factory = environment_factory(tmp_path)
    args = trl.GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, num_generations=2,
                          max_steps=1, max_completion_length=96, max_tool_calling_iterations=2, logging_steps=1,
                          report_to="none", use_cpu=True, save_strategy="no", learning_rate=1e-4)
    trainer = trl.GRPOTrainer(model=model, args=args, processing_class=tokenizer,
                              train_dataset=level_dataset(tmp_path, rows=2, prompt="Win the game."),
                              environment_factory=factory)
    trainer.train()
    logged = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    assert logged["rewards/SpadegymToolEnv/mean"] == 1.0  # the episode's return, from the sandbox
    assert logged["tools/call_frequency"] > 0


def test_the_tool_env_plays_one_episode_by_the_return_rule(tmp_path: Path) -> None:
    (tmp_path / "door.py").write_text(LEVEL)
    env = environment_factory(PoolLevels([tmp_path]))()
    prompt = env.reset(level_id="door", seed=3)
    assert prompt.endswith("A door. Actions: go, wait.")
    assert env.act("wait") == "Nothing happens." and env.get_reward() == 0.0
    assert env.act("go").endswith("The game is over (return 1).") and env.get_reward() == 1.0
    assert env.act("go").startswith("The game is over")
    assert [m for m in dir(SpadegymToolEnv) if not m.startswith("_")] == ["act", "get_reward", "reset"]


def test_the_dataset_names_levels_of_a_pool_and_none_for_a_live_run(tmp_path: Path) -> None:
    (tmp_path / "door.py").write_text(LEVEL)
    rows = level_dataset(tmp_path, rows=4, seed=1)
    assert rows.column_names == ["prompt", "level_id", "seed"]
    assert set(rows["level_id"]) == {"door"} and len(set(rows["seed"])) == 4


#: A ChatML template that knows nothing of tools, like SmolLM2's (the model `spadegym models prepare` offers).
CHATML_WITHOUT_TOOLS = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def grpo_one_step(tmp_path: Path, model, tokenizer):
    args = trl.GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, num_generations=2,
                          max_steps=1, max_completion_length=96, max_tool_calling_iterations=2, logging_steps=1,
                          report_to="none", use_cpu=True, save_strategy="no", learning_rate=1e-4)
    return trl.GRPOTrainer(model=model, args=args, processing_class=tokenizer,
                           train_dataset=level_dataset(tmp_path, rows=2), environment_factory=environment_factory(tmp_path))


def test_a_chatml_model_without_tool_calling_trains_once_given_a_tool_template(tmp_path: Path) -> None:
    from spadegym.adapters.trl_env import with_tool_calling

    (tmp_path / "door.py").write_text(LEVEL)
    model, tokenizer = tiny_tool_caller()
    tokenizer.chat_template = CHATML_WITHOUT_TOOLS
    with pytest.raises(ValueError, match="does not support tool calling"):  # what a SmolLM2 user met
        grpo_one_step(tmp_path, model, tokenizer)
    trainer = grpo_one_step(tmp_path, model, with_tool_calling(tokenizer))
    trainer.train()
    logged = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    assert logged["rewards/SpadegymToolEnv/mean"] == 1.0
    assert with_tool_calling(tokenizer) is tokenizer  # a template with tools is kept as it is


def test_a_template_that_is_neither_tool_capable_nor_chatml_is_refused_in_one_sentence() -> None:
    from spadegym.adapters.trl_env import with_tool_calling
    from spadegym.errors import UserError

    _, tokenizer = tiny_tool_caller()
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    with pytest.raises(UserError, match="cannot render tool calls and is not ChatML"):
        with_tool_calling(tokenizer)


#: The door, listing its actions (what a reply that calls no tool is read against).
LISTED_DOOR = LEVEL + '''
    def valid_actions(self):
        return ["go", "wait"]
'''


def test_a_reply_that_calls_no_tool_is_played_by_the_action_it_names_so_rollouts_differ(tmp_path: Path) -> None:
    from spadegym.adapters.trl_env import REPLY_CREDIT, reply_reward

    (tmp_path / "door.py").write_text(LISTED_DOOR)
    factory = environment_factory(PoolLevels([tmp_path]))
    named, boxed, silent, called = factory(), factory(), factory(), factory()
    for env in (named, boxed, silent, called):
        env.reset(level_id="door", seed=3)
    called.act("wait")
    replies = [[{"role": "assistant", "content": text}] for text in (
        "I think I will go through.", "\\boxed{wait}", "What a lovely door.", "")]
    # A small model's rollouts, none with a tool call, now earn different rewards: GRPO has a signal.
    assert reply_reward(replies, [named, boxed, silent, called]) == [REPLY_CREDIT, REPLY_CREDIT, 0.0, 1.0]
    assert named.get_reward() == 1.0 and boxed.get_reward() == 0.0  # the named action was played in the game
    assert [m for m in dir(SpadegymToolEnv) if not m.startswith("_")] == ["act", "get_reward", "reset"]
