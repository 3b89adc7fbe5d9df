"""Prefix reuse across turns: an episode's later turns encode only their new tokens, and nothing else changes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from spadegym.train import Policy, Sample, Trace, TrainConfig  # noqa: E402
from spadegym.train.kvcache import Prefix, PrefixCache  # noqa: E402
from spadegym.train.models import load_model  # noqa: E402

OPENINGS = ["sequence: 2, 4, 6, ? actions: say 8, say 9.", "Three doors: a, b and c.",
            "grid 3x3, you are at the top left; reach the goal. north south east west", "guess a number"]


def make_policy(tiny_dir, **settings) -> Policy:
    model, tokenizer = load_model(tiny_dir)
    return Policy(model, tokenizer, TrainConfig(**{"max_new_tokens": 12, **settings}), seed=0)


def play(policy: Policy, turns: int = 4, greedy: bool = True, keys: bool = True) -> list[Trace]:
    """Episodes of different lengths played turn by turn as the agent plays them (one call per turn);
    each reaches its own number of turns, so later calls batch rows of different ages."""
    traces = [Trace(policy.chat.prompt([{"role": "system", "content": "You play a game."},
                                        {"role": "user", "content": text}])) for text in OPENINGS]
    for turn in range(turns):
        live = [i for i in range(len(traces)) if turn <= i + 1]
        for i in live:
            if turn:
                traces[i].add_environment(policy.chat.user_turn(f"wrong{'!' * i}, try again (turn {turn + 1})"))
        outs = policy.generate([traces[i].ids() for i in live], 6 + turn, greedy=greedy,
                               keys=[f"episode-{i}" for i in live] if keys else None)
        for i, (ids, logprobs) in zip(live, outs):
            traces[i].add_sampled(ids, logprobs)
            if ids[-1] != policy.chat.eos_id:
                traces[i].add_environment([policy.chat.eos_id])
    return traces


@pytest.mark.parametrize("batch", [1, 3])  # a batch per episode, and batches mixing episodes of different ages
def test_greedy_tokens_are_the_same_whether_turns_reuse_the_cache_or_encode_everything(tiny_dir, batch):
    fresh = make_policy(tiny_dir, cache_mb=0, generation_batch=batch)
    cached = make_policy(tiny_dir, generation_batch=batch)
    assert fresh.prefixes is None and cached.prefixes is not None
    expected, got = play(fresh), play(cached)
    assert [t.completion for t in got] == [t.completion for t in expected]
    for a, b in zip(got, expected):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    # The later turns encoded only their new tokens: far fewer than the conversations' lengths.
    assert cached.work["sampled"] == fresh.work["sampled"]
    assert cached.work["encoded"] < 0.6 * fresh.work["encoded"]


def test_cached_turns_log_the_probabilities_the_trainer_computes(tiny_dir):
    policy = make_policy(tiny_dir, temperature=0.7)
    traces = play(policy, greedy=False)
    batch = policy.batch([Sample(t, 0.0, "agent") for t in traces])
    with torch.no_grad():
        recomputed = policy.logprobs_of(batch)
    mask = (batch["completion_mask"] * batch["tool_mask"]).bool()
    assert mask.sum() > 40
    assert torch.allclose(recomputed[mask], batch["sampling_per_token_logps"][mask], atol=1e-4)


def test_a_grpo_step_on_cached_turns_is_the_step_on_turns_encoded_whole(tiny_dir):
    stats = []
    for cache_mb in (0, 64):
        policy = make_policy(tiny_dir, cache_mb=cache_mb, lr=5e-3)
        traces = play(policy)
        step = policy.update([Sample(t, a, "agent") for t, a in zip(traces, (1.0, -1.0, 0.5, -0.5))])
        stats.append(step)
    for key in ("loss", "grad_norm", "kl_sampling", "tokens_trained"):
        assert stats[1][key] == pytest.approx(stats[0][key], rel=1e-4, abs=1e-6), key


def test_a_cache_too_small_for_every_episode_changes_only_the_work(tiny_dir):
    expected = play(make_policy(tiny_dir, cache_mb=0))
    small = make_policy(tiny_dir, cache_mb=1)
    small.prefixes.budget = 150_000  # room for two of the four episodes (46-70 kB each with the tiny model)
    got = play(small)
    assert [t.completion for t in got] == [t.completion for t in expected]
    assert small.prefixes.nbytes <= 150_000 and 1 <= len(small.prefixes) < 4


def test_an_update_empties_the_cache(tiny_dir):
    policy = make_policy(tiny_dir, lr=5e-3)
    traces = play(policy)
    assert len(policy.prefixes) > 0
    policy.update([Sample(traces[0], 1.0, "agent"), Sample(traces[1], -1.0, "agent")])
    assert len(policy.prefixes) == 0  # keys and values of the old weights are never reused


def test_a_prefix_is_reused_only_for_the_sequence_it_starts():
    cache = PrefixCache(budget=10_000)
    layer = (torch.zeros(1, 3, 2), torch.zeros(1, 3, 2))
    cache.store("a", Prefix([1, 2, 3], [layer]))
    assert cache.lookup("a", [1, 2, 3]) is None  # nothing left to encode: the next token needs a forward pass
    cache.store("a", Prefix([1, 2, 3], [layer]))
    assert cache.lookup("a", [1, 2, 4, 5]) is None and len(cache) == 0  # another sequence: dropped
    cache.store("a", Prefix([1, 2, 3], [layer]))
    assert cache.lookup("a", [1, 2, 3, 4]) is not None


def test_prefixes_in_use_are_not_evicted_by_the_episodes_of_the_same_call():
    layer = (torch.zeros(1, 3, 2), torch.zeros(1, 3, 2))  # 48 bytes a prefix
    cache = PrefixCache(budget=100)
    for key in ("a", "b"):
        cache.store(key, Prefix([1, 2, 3], [layer]))
    cache.tick()
    assert cache.lookup("a", [1, 2, 3, 4]) and cache.lookup("b", [1, 2, 3, 4])
    assert cache.store("c", Prefix([1, 2, 3], [layer])) is False  # would evict a prefix this call uses
    assert len(cache) == 2
    cache.tick()
    cache.lookup("b", [1, 2, 3, 4])
    assert cache.store("c", Prefix([1, 2, 3], [layer])) is True  # "a" was not used in this call: it goes
    assert cache.lookup("a", [1, 2, 3, 4]) is None and cache.evicted == 1


def test_episodes_that_start_alike_encode_their_common_beginning_once(tiny_dir):
    policy, plain = make_policy(tiny_dir), make_policy(tiny_dir, cache_mb=0)
    group = policy.chat.prompt([{"role": "system", "content": "You play a game."},
                                {"role": "user", "content": OPENINGS[0]}])
    other = policy.chat.prompt([{"role": "system", "content": "You play a game."},
                                {"role": "user", "content": OPENINGS[1]}])
    prompts = [group] * 3 + [other]  # a GRPO group of three plays of one instance, and another episode
    got = policy.generate(prompts, 8, greedy=True, keys=["a", "b", "c", "d"])
    expected = plain.generate(prompts, 8, greedy=True)
    assert [ids for ids, _ in got] == [ids for ids, _ in expected]
    for (_, a), (_, b) in zip(got, expected):
        assert a == pytest.approx(b, abs=1e-4)
    common = next(n for n in range(len(other)) if group[n] != other[n])  # the system prompt and more
    # The common beginning once, the rest of the group's prompt once more and one token per play of it;
    # the other episode its own tokens after the common beginning.
    assert policy.work["encoded"] == (len(group) - 1) + 3 + (len(other) - common)
    assert plain.work["encoded"] == 3 * len(group) + len(other)
