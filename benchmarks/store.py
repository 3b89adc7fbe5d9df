"""How fast is the run store? Inserts, reads, exports and the report on a run of many short episodes.

python benchmarks/store.py                         # 20 rounds x 1000 episodes
python benchmarks/store.py --rounds 50 --episodes 2000 --report
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from spadegym.level import Level, Params
from spadegym.rollout.records import Episode, Turn
from spadegym.store import RunStore
from spadegym.store.export import export_run


def _episodes(n: int, round_: int, envs: int, rnd: random.Random) -> list[dict]:
    out = []
    for i in range(n):
        turns = [
            Turn(
                observation=f"Grid {rnd.randint(0, 99)}: you are at ({t}, {i % 7}). Moves: N, S, E, W." * 3,
                reply=f"<think>step {t}</think> I go \\boxed{{{rnd.choice('NSEW')}}}",
                action=rnd.choice("NSEW"),
                reward=0.0,
            )
            for t in range(rnd.randint(1, 6))
        ]
        ep = Episode(
            env_id=f"env-{round_}-{i % envs}",
            seed=i,
            hinted=bool(i % 2),
            turns=turns,
            ret=rnd.choice((0.0, 1.0)),
        )
        out.append({**ep.to_dict(), "round": round_, "split": "train"})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=1000, help="episodes per round")
    parser.add_argument("--envs", type=int, default=24, help="environments per round")
    parser.add_argument("--report", action="store_true", help="also time the HTML report")
    args = parser.parse_args()
    rnd = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        store = RunStore.create(run_dir, config={}, versions={})
        write_s = 0.0
        for n in range(1, args.rounds + 1):
            batch = _episodes(args.episodes, n, args.envs, rnd)  # built outside the timer
            start = time.perf_counter()
            with store.round(n) as tx:
                for e in range(args.envs):
                    tx.add_environment(f"env-{n}-{e}", Level("class XEnv: pass\n" * 20, "Optimization", "h",
                                                              Params("maze", {"size": e})))
                tx.add_episodes(batch)
                tx.add_scores(
                    [
                        {"env_id": f"env-{n}-{e}", "win_rate": rnd.random(), "regret": rnd.random()}
                        for e in range(args.envs)
                    ]
                )
                tx.save_state("buffer", {"levels": list(range(200))})
                tx.finish({"win_rate": rnd.random(), "episodes": args.episodes})
            write_s += time.perf_counter() - start
        total = args.rounds * args.episodes
        size = (run_dir / "run.sqlite").stat().st_size + sum(
            p.stat().st_size for p in run_dir.glob("run.sqlite-*")
        )
        start = time.perf_counter()
        one_env = store.episodes(env_id=f"env-{args.rounds // 2}-3")
        read_env_s = time.perf_counter() - start
        start = time.perf_counter()
        everything = store.episodes()
        read_all_s = time.perf_counter() - start
        store.close()
        print(
            f"episodes written     {total} in {write_s:.2f} s  ({total / write_s:,.0f} episodes/s, incl. commit)"
        )
        print(f"store size           {size / 1e6:.1f} MB  ({size / total:.0f} bytes/episode)")
        print(f"read one env         {len(one_env)} episodes in {read_env_s * 1000:.1f} ms")
        print(
            f"read all episodes    {len(everything)} in {read_all_s:.2f} s ({len(everything) / read_all_s:,.0f}/s)"
        )
        for fmt in ("jsonl", "parquet"):
            start = time.perf_counter()
            export_run(run_dir, fmt, "episodes", Path(tmp) / f"episodes.{fmt}")
            print(f"export {fmt:<13} {time.perf_counter() - start:.2f} s")
        if args.report:
            from spadegym.report import write_report

            start = time.perf_counter()
            path = write_report(run_dir)
            print(
                f"report               {time.perf_counter() - start:.2f} s ({path.stat().st_size / 1e6:.1f} MB)"
            )


if __name__ == "__main__":
    main()
