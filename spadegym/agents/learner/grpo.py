"""Group-relative advantages (GRPO-style outcome advantages) and the policy-gradient loss.

A group is the plays of one environment instance in one arm: the same
``env_id``, ``group`` index, ``seed`` and ``hinted`` flag. Keeping the arms
apart matters: in a mixed group the hinted wins (near-certain once the learner
reads hints, so their gradient is ~0) only lower the advantage of the
unhinted wins, and the no-hint policy learnt measurably slower (families at
level 0, key-and-door) than with one group per arm.
Episodes alone in their group (e.g. replayed or ungrouped plays) are pooled
with the other lone episodes of the same environment and arm, so an update
fed arbitrary episodes still has a baseline.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np

from ...rollout.records import Episode
from ...signals.advantages import group_advantages as z_scores

GroupKey = tuple


def group_key(episode: Episode) -> GroupKey:
    return (episode.env_id, episode.group, episode.seed, episode.hinted)


def group_advantages(episodes: Sequence[Episode], eps: float = 1e-6) -> list[float]:
    """One advantage per episode (in order); unscored episodes (infrastructure failures) get 0."""
    sizes = Counter(group_key(ep) for ep in episodes if ep.scored)

    def key(i: int, ep: Episode) -> Hashable:
        if not ep.scored:
            return ("unscored", i)  # alone in its group: advantage 0
        k = group_key(ep)
        return ("lone", ep.env_id, ep.hinted) if sizes[k] == 1 else k

    keys = [key(i, ep) for i, ep in enumerate(episodes)]
    return z_scores([ep.ret for ep in episodes], keys, eps).tolist()


def policy_gradient(probs: np.ndarray, logp: np.ndarray, view_starts: np.ndarray, pair_view: np.ndarray,
                    chosen: np.ndarray, advantages: np.ndarray, entropy_coef: float) -> tuple[np.ndarray, dict]:
    """dLoss/dscore per pair for ``loss = mean_steps(-A * log pi(a) - beta * H(pi))``.

    ``chosen`` holds the pair index of each step's action, ``advantages`` the
    advantage of each step (its episode's). Returns the gradient and stats.
    """
    steps = len(chosen)
    plogp = probs * logp
    entropy = -np.add.reduceat(plogp, view_starts)  # per step
    # d(-A log pi_a)/ds_j = -A (1[j=a] - pi_j);  d(-beta H)/ds_j = beta pi_j (log pi_j + H)
    grad = advantages[pair_view] * probs + entropy_coef * (plogp + probs * entropy[pair_view])
    grad[chosen] -= advantages
    grad /= steps
    loss = float(-(advantages * logp[chosen]).sum() / steps - entropy_coef * entropy.mean())
    return grad, {"loss": loss, "entropy": float(entropy.mean())}
