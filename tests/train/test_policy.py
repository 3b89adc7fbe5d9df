"""The policy's GRPO path through TRL: what is sampled is what is trained, and the update moves the right way."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from spadegym.train import Policy, Sample, Trace, TrainConfig  # noqa: E402
from spadegym.train.models import load_model  # noqa: E402

MESSAGES = [{"role": "system", "content": "You play a game."},
            {"role": "user", "content": "sequence: 2, 4, 6, ? actions: say 8, say 9. Reply in \\boxed{}."}]


def make_policy(tiny_dir, **settings) -> Policy:
    model, tokenizer = load_model(tiny_dir)
    return Policy(model, tokenizer, TrainConfig(**{"max_new_tokens": 12, **settings}), seed=0)


def episode(policy: Policy, turns: int = 3, new_tokens: int = 10) -> Trace:
    """A multi-turn conversation sampled the way the agent samples it."""
    trace = Trace(policy.chat.prompt(MESSAGES))
    for turn in range(turns):
        if turn:
            trace.add_environment(policy.chat.user_turn(f"wrong, try again (turn {turn + 1})"))
        ids, logprobs = policy.generate([trace.ids()], new_tokens)[0]
        trace.add_sampled(ids, logprobs)
        if ids[-1] != policy.chat.eos_id:
            trace.add_environment([policy.chat.eos_id])
    return trace


def sequence_logprob(policy: Policy, trace: Trace) -> float:
    batch = policy.batch([Sample(trace, 0.0, "agent")])
    with torch.no_grad():
        logps = policy.logprobs_of(batch)
    mask = (batch["completion_mask"] * batch["tool_mask"]).bool()
    return float(logps[mask].sum())


@pytest.mark.parametrize("temperature", [1.0, 0.5])  # the trainer scores with the sampling temperature
def test_sampled_logprobs_equal_the_trainers_recomputed_ones(tiny_dir, temperature):
    policy = make_policy(tiny_dir, temperature=temperature)
    traces = [episode(policy, turns=3), episode(policy, turns=2, new_tokens=6)]
    batch = policy.batch([Sample(t, 0.0, "agent") for t in traces])  # padded together, as in an update
    with torch.no_grad():
        recomputed = policy.logprobs_of(batch)
    mask = (batch["completion_mask"] * batch["tool_mask"]).bool()
    assert mask.sum() > 20
    assert torch.allclose(recomputed[mask], batch["sampling_per_token_logps"][mask], atol=1e-4)


def test_the_next_turn_is_generated_from_the_exact_ids_that_are_trained(tiny_dir):
    policy = make_policy(tiny_dir)
    trace = episode(policy, turns=2)
    # The observation turn is the template's rendering of a user message, appended after the reply's end.
    user = policy.chat.user_turn("wrong, try again (turn 2)")
    text = policy.tokenizer.decode(user)
    assert "<|im_start|>user\nwrong, try again (turn 2)<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")
    assert trace.completion[:len(trace.completion)].count(policy.chat.eos_id) >= 1
    start = trace.mask.index(0)
    assert trace.completion[start - 1] == policy.chat.eos_id or trace.mask[start - 1] == 1


def test_observation_tokens_carry_no_loss(tiny_dir):
    policy = make_policy(tiny_dir)
    trace = episode(policy, turns=1)
    trace.add_environment(policy.chat.user_turn("the game says: you lost"))  # trailing observation tokens

    def loss_of(tr: Trace) -> float:
        batch = policy.batch([Sample(tr, 1.0, "agent")])
        batch["num_items_in_batch"] = (batch["completion_mask"] * batch["tool_mask"]).sum().float()
        batch["old_per_token_logps"] = batch["sampling_per_token_logps"] - 0.1  # a ratio away from 1
        policy.trainer.prepare(policy.config.loss_type, 1)
        with torch.no_grad():
            return float(policy.trainer.loss(policy.model, batch))

    other = Trace(trace.prompt, list(trace.completion), list(trace.mask), list(trace.logprobs))
    masked = [i for i, m in enumerate(other.mask) if m == 0][-5:]
    for i in masked:  # different observation tokens, same replies
        other.completion[i] = (other.completion[i] + 7) % len(policy.tokenizer)
    assert loss_of(other) == pytest.approx(loss_of(trace), abs=1e-6)
    unmasked = Trace(other.prompt, other.completion, [1] * len(other.mask), other.logprobs)
    assert loss_of(unmasked) != pytest.approx(loss_of(trace), abs=1e-6)  # the check can fail


@pytest.mark.parametrize("checkpointing", [True, False])
def test_an_update_raises_the_better_completion_and_lowers_the_worse(tiny_dir, checkpointing):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy = make_policy(tiny_dir, lr=5e-3, gradient_checkpointing=checkpointing)
    # A setting the policy applies itself must not warn users about the Trainer's name for it.
    assert not [w for w in caught if "checkpointing" in str(w.message)]
    # The setting reaches the model, not only the trainer's arguments (the trainer's train() never runs).
    flag = getattr(policy.model, "is_activation_checkpointing", None)
    assert (policy.model.is_gradient_checkpointing if flag is None else flag) is checkpointing
    good, bad = episode(policy, turns=2), episode(policy, turns=2)
    before = [sequence_logprob(policy, t) for t in (good, bad)]
    weights = [p.detach().clone() for p in policy.model.parameters()]
    stats = policy.update([Sample(good, 1.0, "agent"), Sample(bad, -1.0, "agent")])
    after = [sequence_logprob(policy, t) for t in (good, bad)]
    assert after[0] > before[0]
    assert after[1] < before[1]
    assert any(not torch.equal(w, p) for w, p in zip(weights, policy.model.parameters()))
    assert stats["tokens_trained"] == good.sampled_tokens + bad.sampled_tokens
    assert stats["kl_sampling"] > 0 and "clip_ratio_region_mean" in stats and "entropy" in stats


def test_no_advantage_means_no_step(tiny_dir):
    policy = make_policy(tiny_dir, lr=5e-3)
    trace = episode(policy, turns=1)
    weights = [p.detach().clone() for p in policy.model.parameters()]
    assert policy.update([Sample(trace, 0.0, "agent")]).get("skipped") == 1
    assert all(torch.equal(w, p) for w, p in zip(weights, policy.model.parameters()))


def test_a_saved_policy_continues_where_it_stopped(tiny_dir, tmp_path):
    policy = make_policy(tiny_dir, lr=5e-3)
    samples = [Sample(episode(policy), 1.0, "agent"), Sample(episode(policy), -1.0, "agent")]
    policy.update(samples)
    policy.save(tmp_path / "ckpt")
    policy.update(samples)
    expected = [p.detach().clone() for p in policy.model.parameters()]

    resumed = make_policy(tiny_dir, lr=5e-3)
    resumed.load(tmp_path / "ckpt")
    assert resumed.updates == 1
    resumed.update(samples)
    for a, b in zip(expected, resumed.model.parameters()):
        assert torch.allclose(a, b, atol=1e-6)  # same weights, optimizer moments and step count


def test_lora_trains_only_the_adapter(tiny_dir):
    pytest.importorskip("peft")
    policy = make_policy(tiny_dir, lr=5e-3, lora=True, lora_r=4)
    base = {n: p.detach().clone() for n, p in policy.model.named_parameters() if "lora_" not in n}
    policy.update([Sample(episode(policy), 1.0, "agent"), Sample(episode(policy), -1.0, "agent")])
    changed = [n for n, p in policy.model.named_parameters() if "lora_" not in n and not torch.equal(base[n], p)]
    assert changed == []
    assert any("lora_" in n and p.requires_grad for n, p in policy.model.named_parameters())


def test_a_trained_adapter_is_folded_to_sample_and_unfolded_to_train(tiny_dir):
    # Sampling folds the LoRA adapter into the base weights (cheaper forward passes); the trainer reads and trains
    # the adapter apart, with what was sampled scored the same and the base weights back as they were.
    pytest.importorskip("peft")
    policy = make_policy(tiny_dir, lr=5e-2, lora=True, lora_r=4)
    policy.update([Sample(episode(policy), 1.0, "agent"), Sample(episode(policy), -1.0, "agent")])  # a live adapter
    base = {n: p.detach().clone() for n, p in policy.model.named_parameters() if "lora_" not in n}
    adapter = {n: p.detach().clone() for n, p in policy.model.named_parameters() if "lora_" in n}
    traces = [episode(policy, turns=2), episode(policy, turns=2)]
    folded = {n: p.detach().clone() for n, p in policy.model.named_parameters() if "lora_" not in n}
    assert any(not torch.equal(base[n], folded[n]) for n in base)  # sampled with the adapter in the weights
    batch = policy.batch([Sample(t, 0.0, "agent") for t in traces])
    with torch.no_grad():
        recomputed = policy.logprobs_of(batch)
    mask = (batch["completion_mask"] * batch["tool_mask"]).bool()
    assert torch.allclose(recomputed[mask], batch["sampling_per_token_logps"][mask], atol=1e-4)
    for n, p in policy.model.named_parameters():
        if "lora_" not in n:
            assert torch.allclose(p, base[n], atol=1e-6), n  # unfolded: the base weights as they were
    policy.update([Sample(traces[0], 1.0, "agent"), Sample(traces[1], -1.0, "agent")])
    assert any(not torch.equal(adapter[n], p) for n, p in policy.model.named_parameters() if "lora_" in n)
    assert all(torch.allclose(p, base[n], atol=1e-6) for n, p in policy.model.named_parameters() if "lora_" not in n)


def test_long_sequences_go_fewer_at_a_time(tiny_dir):
    policy = make_policy(tiny_dir, micro_batch=4, micro_batch_tokens=1000)
    assert policy._micro_batches([100, 100, 300, 300, 600], [0, 1, 2, 3, 4]) == [[0, 1, 2], [3], [4]]


def test_prompts_batched_by_length_come_back_in_their_order(tiny_dir):
    policy = make_policy(tiny_dir, generation_batch=2)
    long = MESSAGES + [{"role": "assistant", "content": "\\boxed{say 9}"},
                       {"role": "user", "content": "wrong; one more try. actions: say 8, say 10."}]
    prompts = [policy.chat.prompt(long), policy.chat.prompt(MESSAGES), policy.chat.prompt(long[:1] + long[3:])]
    assert len({len(p) for p in prompts}) == 3  # three lengths, not in order
    traces = []
    for prompt, (ids, logprobs) in zip(prompts, policy.generate(prompts, 8)):
        trace = Trace(prompt)
        trace.add_sampled(ids, logprobs)
        traces.append(trace)
    batch = policy.batch([Sample(t, 0.0, "agent") for t in traces])
    with torch.no_grad():
        recomputed = policy.logprobs_of(batch)
    mask = (batch["completion_mask"] * batch["tool_mask"]).bool()
    assert torch.allclose(recomputed[mask], batch["sampling_per_token_logps"][mask], atol=1e-4)  # each its own


def scripted(policy: Policy, replies: list[str]) -> Trace:
    """An episode whose replies are given (each ends with the end-of-turn token), scored as if sampled."""
    trace = Trace(policy.chat.prompt(MESSAGES))
    for turn, reply in enumerate(replies):
        if turn:
            trace.add_environment(policy.chat.user_turn("wrong, try again"))
        ids = policy.tokenizer.encode(reply, add_special_tokens=False) + [policy.chat.eos_id]
        trace.add_sampled(ids, [0.0] * len(ids))
    batch = policy.batch([Sample(trace, 0.0, "agent")])
    with torch.no_grad():
        logps = policy.logprobs_of(batch)[0].tolist()
    trace.logprobs = [lp if m else 0.0 for lp, m in zip(logps, trace.mask)]
    return trace


def end_of_turn_logprob(policy: Policy, traces: list[Trace]) -> float:
    """Mean log-probability of the replies' end-of-turn tokens."""
    batch = policy.batch([Sample(t, 0.0, "agent") for t in traces])
    with torch.no_grad():
        logps = policy.logprobs_of(batch)
    ends = (batch["completion_ids"] == policy.chat.eos_id) & (batch["completion_mask"] * batch["tool_mask"]).bool()
    return float(logps[ends].mean())


def test_per_episode_averaging_keeps_a_long_losers_turn_ends_from_outweighing_a_winners(tiny_dir):
    # A winner answers in one turn, a loser in four: with the loss summed over tokens ('dapo') the
    # loser's four end-of-turn tokens outweigh the winner's one and the end of a turn falls; averaged
    # per episode ('grpo') each episode's ends weigh as much as its advantage. The defaults: 'grpo'
    # for the agent (multi-turn), 'dapo' for the designer (single completions).
    change = {}
    for role in ("designer", "agent"):
        policy = make_policy(tiny_dir, lr=5e-3)
        win, lose = scripted(policy, ["\\boxed{say 8}"]), scripted(policy, ["\\boxed{say 9}"] * 4)
        before = end_of_turn_logprob(policy, [win, lose])
        policy.update([Sample(win, 1.0, role), Sample(lose, -1.0, role)])
        change[role] = end_of_turn_logprob(policy, [win, lose]) - before
    assert change["designer"] < 0
    assert change["agent"] > change["designer"] + 0.5 * abs(change["designer"])
