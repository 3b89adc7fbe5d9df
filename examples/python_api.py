"""A self-play run from Python: a config, a callback that sees each round, the result and its store."""

from spadegym import RunConfig, RunStore, run
from spadegym.loop import RunCallback


class PrintRounds(RunCallback):
    def on_round(self, summary):
        print(f"round {summary.round}: {summary.episodes} episodes, no-hint win rate {summary.win_rate:.2f}")


config = RunConfig(
    rounds=2, envs_per_round=4, plays=4, hint_plays=4, group_size=2,  # a tiny run: seconds, not minutes
    skills=["Logical Deduction"], skills_per_round=1,
    heldout={"families": ["code_breaker"], "levels": "easiest", "seeds": 1},
)
result = run(config, "runs/api", callbacks=[PrintRounds()], report=False)

with RunStore.open(result.run_dir) as store:
    levels = store.environments(valid_only=True)
print(f"{result.rounds} rounds, {len(levels)} valid levels in {result.run_dir}")
