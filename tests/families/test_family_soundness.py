"""Every built-in family is sound at every level: the validation gate accepts each rendered file.

A seed renders the level as ``spadegym new FAMILY --level L --seed S`` does (it
picks the ``variant`` knob) and is also the gate's own seed (its probe instances
and random-policy choices). The suite runs a few seeds, among them the ones at
which earlier versions of the families were degenerate (a random policy won too
often); ``benchmarks/family_soundness.py`` runs the same check over 64 seeds. A tool-use family's
verdicts cost more (its probes call tools), so the suite checks each of its levels at one seed.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from spadegym.families import list_families
from spadegym.families.registry import new_environment
from spadegym.sandbox import Sandbox
from spadegym.validate import validate_source
from spadegym.validate.config import ValidationConfig

#: 11: garden_causes and lamp_wiring level 0; 20: button_lock level 0; 34: take_away level 0.
SEEDS = (11, 20, 34)


@pytest.mark.parametrize("family", [f.name for f in list_families()])
def test_every_level_passes_the_gate_at_every_seed(family: str, sandbox: Sandbox) -> None:
    fam = next(f for f in list_families() if f.name == family)
    cases = [(level, seed) for level in range(fam.max_level + 1) for seed in SEEDS]
    if fam.setting == "tool_use":  # its verdicts cost more (tool probes): each level at one seed
        cases = [(level, SEEDS[level % len(SEEDS)]) for level in range(fam.max_level + 1)]

    def verdict(case: tuple[int, int]):
        level, seed = case
        _, _, source = new_environment(family, level, seed=seed)
        return validate_source(source, f"{family}.py", sandbox=sandbox, config=ValidationConfig(seed=seed))

    with ThreadPoolExecutor(max_workers=4) as pool:
        verdicts = list(pool.map(verdict, cases))
    bad = [f"level {level} seed {seed}: {v.feedback()}" for (level, seed), v in zip(cases, verdicts) if not v.valid]
    assert not bad, "\n".join(bad)
