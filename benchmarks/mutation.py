"""Mutation designer throughput: proposals validated per second through the real gate.

Rounds of propose -> validate (shared sandbox) -> update, the parents of each
round being the valid levels so far (scored by a stand-in designer reward that
prefers mid-difficulty levels, so the operator policy has something to learn).

    python benchmarks/mutation.py [--rounds 5] [--count 24]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections import Counter

from spadegym.designers.mutation import MutationDesigner
from spadegym.families import SKILLS, DesignContext, Feedback, LevelSummary, get_family
from spadegym.sandbox import Sandbox
from spadegym.validate import validate_source


def stand_in_reward(family: str, knobs: dict, rng: random.Random) -> float:
    """Highest for levels in the middle of the family's ladder (a plateau-like reward)."""
    fam = get_family(family)
    index = fam.level_index(knobs)
    ordered = [i / max(1, len(fam.knobs[k]) - 1) for k, i in index.items() if k not in ("variant",)]
    mean = sum(ordered) / len(ordered)
    return 1.0 - 2 * abs(mean - 0.5) + rng.gauss(0, 0.05)


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
    propose_s = validate_s = 0.0
    with Sandbox() as sandbox:
        validate_source(get_family("grid_maze").render({}), "warm.py", sandbox=sandbox)  # start the zygote
        for n in range(args.rounds):
            skill = SKILLS[n % len(SKILLS)]
            parents = sorted((p for p in pool if p.skill == skill), key=lambda p: -p.score)[:16]
            t0 = time.perf_counter()
            cands = asyncio.run(designer.propose(DesignContext(skill=skill, count=args.count, round=n, parents=parents)))
            propose_s += time.perf_counter() - t0
            feedback = []
            for c in cands:
                t0 = time.perf_counter()
                verdict = validate_source(c.source, f"{c.candidate_id}.py", sandbox=sandbox)
                validate_s += time.perf_counter() - t0
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
    total = propose_s + validate_s
    print(json.dumps({
        "proposals": proposals, "valid": valid, "valid_share": round(valid / max(1, proposals), 3),
        "refused": dict(refused), "operators_used": dict(ops),
        "propose_ms_per_candidate": round(1000 * propose_s / max(1, proposals), 2),
        "validate_ms_per_candidate": round(1000 * validate_s / max(1, proposals), 1),
        "proposals_validated_per_second": round(proposals / total, 2),
        "operator_probabilities_after": {k: round(v, 3) for k, v in designer.operator_probabilities().items()},
    }, indent=1))


if __name__ == "__main__":
    main()
