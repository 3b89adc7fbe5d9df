"""The search's budget follows what each skill's proposals yielded (Thompson sampling)."""

from __future__ import annotations

from spadegym.redteam.allocate import PARTIAL_YIELD, YieldAllocator


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
    assert allocator.state()["b"] == {"tried": 10, "found": 0.0}
