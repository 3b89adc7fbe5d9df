"""The learner's memory and work per decision are bounded by its view budget, not by the menu a file lists.

``tests/fixtures/hostile/learner_menus.py`` stays within every sandbox cap
(4,096 actions, 57,344 characters, a fresh menu each turn, a 300-line
observation; the gate refuses it only for its hint); without the budget one of
its views held ~6 million feature entries and an update held every decision's.
"""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path

import numpy as np

from spadegym.agents.learner import Featurizer, make_learner
from spadegym.agents.learner.features import VIEW_ENTRIES
from spadegym.families import get_family
from spadegym.rollout.play import play_file
from spadegym.sandbox import Sandbox, SandboxConfig

HOSTILE = Path(__file__).parents[1] / "fixtures" / "hostile" / "learner_menus.py"
OBSERVATION = "\n".join(f"row {i}: {i} {i + 1} {i % 7} {i % 11} {i % 13}" for i in range(300))
MENU = [f"{i:04d}." + ".".join("abcdefghijklmnopqrstuvwxyz"[(i * k) % 26] for k in (1, 3, 5, 7, 11))
        for i in range(4096)]


def test_a_view_of_the_longest_menu_the_sandbox_allows_stays_within_the_budget() -> None:
    view = Featurizer().view(OBSERVATION + "\nhint: the answer starts with 0042", MENU)
    assert len(view.pair_len) == len(MENU) and (view.pair_len >= 1).all()  # every action is scored
    assert view.size <= VIEW_ENTRIES + len(MENU)
    whole_text = Featurizer().view("", ["0042.c.g.k.o.w"])  # an action keeps its whole-text entry first
    assert whole_text.pair_idx[0] in view.pair_idx[view.pair_ptr[42]:view.pair_ptr[43]]


def test_views_of_the_built_in_families_are_untouched_by_the_budget() -> None:
    family = get_family("knapsack")
    with Sandbox(SandboxConfig(seccomp=False, landlock=False, namespaces=False)) as sandbox:
        env = sandbox.open(family.render(family.level_knobs(family.max_level)), "knapsack.py")
        first = env.reset(seed=3, want=["valid_actions"])
        env.close()
    assert first.ok, first
    observation, menu = first.value["observation"] + "\nhint: take the heaviest", first.value["valid_actions"]
    budgeted, unbounded = Featurizer().view(observation, menu), Featurizer(view_entries=1 << 40).view(observation, menu)
    for name in ("obs_idx", "pair_idx", "pair_val", "pair_ptr", "cross_idx", "cross_val", "cross_ptr"):
        assert np.array_equal(getattr(budgeted, name), getattr(unbounded, name)), name


def test_the_learner_plays_and_trains_on_the_hostile_menus_in_bounded_memory() -> None:
    learner = make_learner(seed=0)
    # Three turns an episode (the host's cap); the tier does not change the menus.
    config = SandboxConfig(seccomp=False, landlock=False, namespaces=False, max_episode_turns=3)
    tracemalloc.start()
    try:
        episodes = asyncio.run(play_file(HOSTILE, learner, episodes=2, hinted=True,
                                         sandbox_config=config))
        played_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        stats = learner.update(episodes)
        update_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(ep.failure is None and ep.turns for ep in episodes), [ep.failure_message for ep in episodes]
    assert stats["steps"] == sum(len(ep.turns) for ep in episodes) == 6
    # Unbounded, these 6 decisions were ~38 million entries: gigabytes in an update. Now each view is
    # at most VIEW_ENTRIES (~1.6 MB), and an update's arrays are a few times the views it holds.
    assert played_peak < 150e6, f"{played_peak / 1e6:.0f} MB while playing"
    assert update_peak < 250e6, f"{update_peak / 1e6:.0f} MB while training"
    assert learner.featurizer.cached_entries <= learner.config.cache_entries
