"""The search's budget follows what each skill's proposals yielded (Thompson sampling)."""

from __future__ import annotations

import pytest

from spadegym.redteam.allocate import DECAY, PARTIAL_YIELD, YieldAllocator


def test_slots_flow_to_the_skill_that_keeps_yielding_and_none_to_an_exhausted_one() -> None:
    allocator = YieldAllocator(["a", "b", "c"], seed=1)
    assert sum(allocator.slots(30)) == 30 and min(allocator.slots(30)) > 0  # no evidence yet: every skill tried
    for _ in range(10):
        allocator.record("a", 1.0)
        allocator.record("b", 0.0)
        allocator.record("c", PARTIAL_YIELD)
    assert allocator.slots(100)[0] > 80
    allocator.exhaust("a")
    _, b, c = allocator.slots(100)
    assert b + c == 100 and c > 80  # lost plays are a gradient worth more slots than nothing at all
    assert allocator.state()["b"] == {"tried": 10, "found": 0.0, "recent_found": 0.0,
                                      "recent_tried": pytest.approx(sum(DECAY ** k for k in range(10)))}


def test_an_arm_whose_failures_ran_out_gives_its_slots_to_one_that_still_yields() -> None:
    # "early" found a failure with each of its first 20 proposals, then none with its last 6 (its region is
    # mined out); "steady" finds one with 2 proposals in 5 throughout.
    allocator = YieldAllocator(["early", "steady"], seed=3)
    for k in range(26):
        allocator.record("early", 1.0 if k < 20 else 0.0)
        allocator.record("steady", 1.0 if k % 5 < 2 else 0.0)
    early, steady = allocator.slots(200)
    assert steady > 2 * early  # on its whole history (20 of 26 against 11 of 26) "early" would still lead
