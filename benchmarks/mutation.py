"""Mutation designer throughput: proposals validated per second through the real gate.

Rounds of propose -> validate (shared sandbox) -> update, the parents of each
round being the valid levels so far (scored by a stand-in designer reward that
prefers mid-difficulty levels, so the operator policy has something to learn).

Each round's proposals are validated twice on the same sandbox, in alternating
order: as the loop validates them now (``validate_sources``: the default
settings, ``validation.jobs`` files at once), and as the gate did before
(one file after the other, six fresh workers per file: four more for the
random episodes). Both must
give the same verdicts; the ratio of their rates, and of the CPU time they
used (this process, the zygote and its workers), is the speed-up.

    python benchmarks/mutation.py [--rounds 5] [--count 24]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from collections import Counter

from cpu_time import tree_cpu_s

from spadegym.designers.base import SKILLS, DesignContext, Feedback, LevelSummary
from spadegym.designers.mutation import MutationDesigner
from spadegym.families import get_family
from spadegym.sandbox import Sandbox
from spadegym.validate import ValidationConfig, Verdict, validate_source, validate_sources

#: The gate's settings before the speed-up: one file at a time, six fresh workers per file.
BEFORE = ValidationConfig(random_workers=4, jobs=1)


def stand_in_reward(family: str, knobs: dict, rng: random.Random) -> float:
    """Highest for levels in the middle of the family's ladder (a plateau-like reward)."""
    fam = get_family(family)
    index = fam.level_index(knobs)
    ordered = [i / max(1, len(fam.knobs[k]) - 1) for k, i in index.items() if k not in ("variant",)]
    mean = sum(ordered) / len(ordered)
    return 1.0 - 2 * abs(mean - 0.5) + rng.gauss(0, 0.05)


def outcome(verdict: Verdict) -> tuple:
    """What two validations of one file must agree on."""
    return verdict.valid, verdict.category, [(c.name, c.passed, c.message) for c in verdict.checks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    designer = MutationDesigner(seed=args.seed)
    pool: list[LevelSummary] = []
    proposals = valid = 0
    refused: Counter[str] = Counter()
    ops: Counter[str] = Counter()
    propose_s = 0.0
    spent = {"now": [0.0, 0.0], "before": [0.0, 0.0]}  # wall, CPU seconds of validation
    same = True
    with Sandbox() as sandbox:
        validate_source(get_family("grid_maze").render({}), "warm.py", sandbox=sandbox)  # start the zygote

        def timed(arm: str, cands: list) -> list[Verdict]:
            c0, t0 = tree_cpu_s(sandbox), time.perf_counter()
            if arm == "now":
                verdicts = validate_sources([(c.source, f"{c.candidate_id}.py", None) for c in cands], sandbox=sandbox)
            else:
                verdicts = [validate_source(c.source, f"{c.candidate_id}.py", sandbox=sandbox, config=BEFORE)
                            for c in cands]
            spent[arm][0] += time.perf_counter() - t0
            spent[arm][1] += tree_cpu_s(sandbox) - c0
            return verdicts

        for n in range(args.rounds):
            skill = SKILLS[n % len(SKILLS)]
            parents = sorted((p for p in pool if p.skill == skill), key=lambda p: -p.score)[:16]
            t0 = time.perf_counter()
            cands = asyncio.run(designer.propose(DesignContext(skill=skill, count=args.count, round=n, parents=parents)))
            propose_s += time.perf_counter() - t0
            arms = ("now", "before") if n % 2 == 0 else ("before", "now")
            verdicts = {arm: timed(arm, cands) for arm in arms}
            same = same and [outcome(v) for v in verdicts["now"]] == [outcome(v) for v in verdicts["before"]]
            feedback = []
            for c, verdict in zip(cands, verdicts["now"]):
                proposals += 1
                ops[c.lineage.operator] += 1
                if verdict.valid:
                    valid += 1
                    score = stand_in_reward(c.family, c.knobs, rng)
                    pool.append(LevelSummary(c.candidate_id, c.skill, 0.5, 0.7, 0.2, score,
                                             family=c.family, knobs=c.knobs))
                    feedback.append(Feedback(c.candidate_id, score, True, c.lineage.operator))
                else:
                    refused[verdict.category or "invalid"] += 1
                    feedback.append(Feedback(c.candidate_id, -1.0, False, c.lineage.operator))
            designer.update(feedback)
    now_rate = proposals / (propose_s + spent["now"][0])
    before_rate = proposals / (propose_s + spent["before"][0])
    print(json.dumps({
        "proposals": proposals, "valid": valid, "valid_share": round(valid / max(1, proposals), 3),
        "refused": dict(refused), "operators_used": dict(ops),
        "propose_ms_per_candidate": round(1000 * propose_s / max(1, proposals), 2),
        "validate_ms_per_candidate": round(1000 * spent["now"][0] / max(1, proposals), 1),
        "validate_cpu_ms_per_candidate": round(1000 * spent["now"][1] / max(1, proposals), 1),
        "proposals_validated_per_second": round(now_rate, 2),
        "before": {"validate_ms_per_candidate": round(1000 * spent["before"][0] / max(1, proposals), 1),
                   "validate_cpu_ms_per_candidate": round(1000 * spent["before"][1] / max(1, proposals), 1),
                   "proposals_validated_per_second": round(before_rate, 2)},
        "speedup_wall": round(now_rate / before_rate, 2),
        "speedup_cpu": round(spent["before"][1] / max(1e-9, spent["now"][1]), 2),
        "verdicts_identical": same,
        "load_average_1min": round(os.getloadavg()[0], 1),
        "operator_probabilities_after": {k: round(v, 3) for k, v in designer.operator_probabilities().items()},
    }, indent=1))


if __name__ == "__main__":
    main()
