"""A small, realistic run written through the public store API (never raw SQL).

Shared by the store, export and report tests: a few rounds of proposals (some
invalid), environments from three families, hinted and unhinted episodes built
as real ``Episode`` records, per-environment scores and full round summaries.
"""

from __future__ import annotations

import random
from pathlib import Path

from spadegym.curriculum.diversity import PoolDiversity, transcript_text
from spadegym.level import Level, Lineage, Params
from spadegym.rollout.records import Episode, Turn
from spadegym.store import RunStore

FAMILIES = {
    "maze": ("Spatial Reasoning", "size"),
    "arith": ("Mathematical Reasoning", "digits"),
    "sequence": ("Pattern Recognition", "length"),
}
REFUSALS = ("timeout", "nondeterministic", "trivial_random_win")

ENV_SOURCE = '''"""A {family} environment, level {level}."""
import random

SKILL = "{skill}"
DIFFICULTY = {{"{knob}": {level}}}


class {cls}Env:
    max_turns = 4
    hint = "compare a < b & think twice"

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(0, {level})
        return "Guess a number 0..{level} <in a box>", {{}}

    def step(self, action):
        won = action == str(self.target)
        return ("right" if won else "wrong"), (1.0 if won else 0.0), True, False, {{}}
'''


def _episode(env_id: str, seed: int, hinted: bool, won: bool, rnd: random.Random) -> Episode:
    hint = "\nhint: compare a < b & think twice" if hinted else ""
    turns = [
        Turn(observation=f"Guess a number <in a box>{hint}", reply="I think \\boxed{3}", action="3"),
        Turn(
            observation="wrong, try again",
            reply="<think>hmm</think> \\boxed{5}",
            action="5",
            reward=1.0 if won else 0.0,
            terminated=True,
        ),
    ]
    return Episode(
        env_id=env_id,
        seed=seed,
        hinted=hinted,
        turns=turns,
        final_observation="right" if won else "wrong",
        terminated=True,
        ret=1.0 if won else 0.0,
        seconds=round(rnd.uniform(0.01, 0.2), 3),
    )


def build_run(run_dir: Path, rounds: int = 5, envs_per_round: int = 4, plays: int = 4) -> RunStore:
    """Write ``rounds`` complete rounds and return the open store."""
    rnd = random.Random(7)
    store = RunStore.create(
        run_dir,
        config={"rounds": rounds, "designer": "mutation", "agent": "learner", "seed": 7},
        versions={"spadegym": "0.1.0", "python": "3.11"},
    )
    buffer: list[str] = []
    diversity = PoolDiversity()
    sources: dict[str, str] = {}
    for n in range(1, rounds + 1):
        with store.round(n) as tx:
            refusals: dict[str, int] = {}
            new_ids = []
            for i in range(envs_per_round + 1):
                family = list(FAMILIES)[(n + i) % len(FAMILIES)]
                skill, knob = FAMILIES[family]
                level = min(1 + n // 2 + i % 2, 5)
                env_id = f"r{n:02d}-{family}-{i}"
                source = ENV_SOURCE.format(
                    family=family, level=level, skill=skill, knob=knob, cls=family.title()
                )
                candidate = {
                    "candidate_id": f"cand-{n}-{i}",
                    "source": source,
                    "skill": skill,
                    "family": family,
                    "knobs": {knob: level},
                    "lineage": {"parents": buffer[-1:], "operator": "harder", "depth": n},
                }
                if i == envs_per_round:  # the last proposal of each round is refused
                    reason = REFUSALS[n % len(REFUSALS)]
                    refusals[reason] = refusals.get(reason, 0) + 1
                    tx.add_proposal(candidate, {"valid": False, "failed": [reason]}, None, valid=False)
                    tx.set_proposal_reward(candidate["candidate_id"], -1.0)
                    continue
                tx.add_proposal(candidate, {"valid": True, "failed": []}, env_id, valid=True)
                tx.add_environment(env_id, Level(source, skill, "compare a < b & think twice",
                                                 Params(family, {knob: level}), Lineage(**candidate["lineage"])),
                                   {"designer": "mutation"})
                new_ids.append(env_id)
                sources[env_id] = source
            buffer.extend(new_ids)
            played = buffer[-2 * envs_per_round :]
            episodes, scores = [], []
            for env_id in played:
                p_win = rnd.uniform(0.05, 0.95)
                p_hint = min(1.0, p_win + rnd.uniform(0.0, 0.4))
                wins = [rnd.random() < p_win for _ in range(plays)]
                wins_h = [rnd.random() < p_hint for _ in range(plays)]
                for g, won in enumerate(wins):
                    episode = _episode(env_id, 100 + g, False, won, rnd)
                    episodes.append({**episode.to_dict(), "round": n, "split": "train"})
                    diversity.add_play(env_id, transcript_text([t.observation for t in episode.turns],
                                                               [t.action for t in episode.turns]))
                for g, won in enumerate(wins_h):
                    episodes.append(
                        {**_episode(env_id, 100 + g, True, won, rnd).to_dict(), "round": n, "split": "train"}
                    )
                wr, wrh = sum(wins) / plays, sum(wins_h) / plays
                scores.append(
                    {
                        "env_id": env_id,
                        "win_rate": wr,
                        "win_rate_hint": wrh,
                        "regret": wrh - wr,
                        "oracle_regret": (1.0 - wr) if env_id.endswith("0") or env_id.endswith("1") else None,
                        "designer_reward": round(0.4 * min(max((wrh - wr) / 0.15, 0), 1) + 0.6 * wr, 4),
                        "plays": plays,
                        "plays_hint": plays,
                        "extra": {"staleness": rnd.randint(0, 3)},
                    }
                )
            heldout = [
                {
                    **_episode(
                        f"heldout-{fam}", 1000 + k, False, rnd.random() < 0.1 * n + 0.1, rnd
                    ).to_dict(),
                    "round": n,
                    "split": "heldout",
                }
                for fam in FAMILIES
                for k in range(3)
            ]
            tx.add_episodes(episodes + heldout)
            tx.add_scores(scores)
            tx.save_state("buffer", {"levels": buffer, "round": n})
            tx.save_state("rng", {"state": rnd.getstate()[1][:3]})
            band = sum(0.2 <= s["win_rate"] <= 0.8 for s in scores) / len(scores)
            tx.finish(
                {
                    "win_rate": sum(s["win_rate"] for s in scores) / len(scores),
                    "win_rate_hint": sum(s["win_rate_hint"] for s in scores) / len(scores),
                    "regret_mean": sum(s["regret"] for s in scores) / len(scores),
                    "band_fraction": band,
                    "difficulty_mean": {
                        f"{fam}.{k}": 1 + n / 2 + j for j, (fam, (_, k)) in enumerate(FAMILIES.items())
                    },
                    "heldout_success": sum(e["ret"] > 0 for e in heldout) / len(heldout),
                    "heldout_by_family": {
                        fam: sum(e["ret"] > 0 for e in heldout if e["env_id"] == f"heldout-{fam}") / 3
                        for fam in FAMILIES
                    },
                    "heldout_by_level": {"0": sum(e["ret"] > 0 for e in heldout) / len(heldout)},
                    "valid": envs_per_round,
                    "proposals": envs_per_round + 1,
                    "refusals": refusals,
                    "skill_mix": {FAMILIES[f][0]: sum(f"-{f}-" in e for e in new_ids) for f in FAMILIES},
                    "buffer_size": len(buffer),
                    "diversity": diversity.summary({e: sources[e] for e in new_ids}, {e: sources[e] for e in buffer}),
                    "episodes": len(episodes),
                    "seconds": round(rnd.uniform(5, 20), 2),
                }
            )
    return store
