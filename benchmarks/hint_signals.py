"""Do the hints measure what the designer is rewarded for? One short self-play run, its regret figures.

Runs the embedded default for a few rounds and prints, over every level played
in every round: the mean hint regret (hinted return minus no-hint return), the
hint arm's success, the Pearson correlation of hint regret with oracle regret
(the solution's return minus the no-hint return: the exact regret the hint
estimates), and the no-hint and hinted success of chosen families.

    python benchmarks/hint_signals.py [--rounds 8] [--seed 0] [--families code_breaker,...] [--set KEY=VALUE]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict

from curriculum import apply_sets, parse_sets
from rich.console import Console

from spadegym.loop import RunConfig, run
from spadegym.signals import pearson
from spadegym.store import RunStore

FOUR = "code_breaker,hidden_order,suspect_grid,device_chain"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--families", default=FOUR)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A run setting, e.g. learner.hint_prior=0 (value read as JSON).")
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        config = RunConfig(rounds=args.rounds, seed=args.seed, **apply_sets({}, parse_sets(args.set)))
        result = run(config, f"{tmp}/run", report=False, console=Console(file=open(os.devnull, "w")))  # noqa: SIM115
        with RunStore.open(f"{tmp}/run") as store:
            scores = store.scores()
            family = {e["env_id"]: e.get("family") for e in store.environments()}
    final = result.summaries[-1].to_dict()
    pairs = [(r["regret"], r["oracle_regret"]) for r in scores if r["oracle_regret"] is not None]
    by_family: dict[str, list[dict]] = defaultdict(list)
    for r in scores:
        by_family[family.get(r["env_id"]) or "?"].append(r)

    def mean(rows: list[dict], key: str) -> float | None:
        vals = [r[key] for r in rows if r[key] is not None]
        return round(sum(vals) / len(vals), 4) if vals else None

    corr = pearson([a for a, _ in pairs], [b for _, b in pairs])
    print(json.dumps({
        "rounds": args.rounds, "seed": args.seed, "level_rounds": len(scores),
        "regret_mean": mean(scores, "regret"), "oracle_regret_mean": mean(scores, "oracle_regret"),
        "hint_success": mean(scores, "win_rate_hint"), "no_hint_success": mean(scores, "win_rate"),
        "hint_oracle_corr": None if corr is None else round(corr, 4),
        # The run's own held-out suite (every family level, 4 seeds each by default): a rough check only.
        "heldout_success": final.get("heldout_success"), "heldout_success_hint": final.get("heldout_success_hint"),
        "families": {f: {"plays": len(by_family[f]), "no_hint": mean(by_family[f], "win_rate"),
                         "hint": mean(by_family[f], "win_rate_hint"), "regret": mean(by_family[f], "regret"),
                         "oracle_regret": mean(by_family[f], "oracle_regret")}
                     for f in args.families.split(",")},
        "seconds": round(time.perf_counter() - start, 1),
    }, indent=1))


if __name__ == "__main__":
    main()
