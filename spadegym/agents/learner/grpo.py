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
                    chosen: np.ndarray, advantages: np.ndarray, entropy_coef: float,
                    old_logp: np.ndarray | None = None, clip: float = 0.2) -> tuple[np.ndarray, dict]:
    """dLoss/dscore per pair for ``loss = mean_steps(-A * ratio - beta * H(pi))``, PPO-clipped.

    ``chosen`` holds the pair index of each step's action, ``advantages`` the
    advantage of each step (its episode's), ``old_logp`` the log-probability of
    the chosen action under the policy that played it (None: the current one,
    i.e. plain REINFORCE). A step whose ratio pi/pi_old has left [1-clip, 1+clip]
    in the direction its advantage pushes stops contributing: that is what lets
    one batch be reused for several epochs without the policy running away.
    Returns the gradient and stats.
    """
    steps = len(chosen)
    plogp = probs * logp
    entropy = -np.add.reduceat(plogp, view_starts)  # per step
    ratio = np.ones(steps) if old_logp is None else np.exp(logp[chosen] - old_logp)
    active = ~(((advantages > 0) & (ratio > 1 + clip)) | ((advantages < 0) & (ratio < 1 - clip)))
    weight = advantages * ratio * active
    # d(-w log pi_a)/ds_j = -w (1[j=a] - pi_j);  d(-beta H)/ds_j = beta pi_j (log pi_j + H)
    grad = weight[pair_view] * probs + entropy_coef * (plogp + probs * entropy[pair_view])
    grad[chosen] -= weight
    grad /= steps
    surrogate = np.minimum(ratio * advantages, np.clip(ratio, 1 - clip, 1 + clip) * advantages)
    loss = float(-surrogate.sum() / steps - entropy_coef * entropy.mean())
    return grad, {"loss": loss, "entropy": float(entropy.mean()), "clipped": float(1 - active.mean())}
