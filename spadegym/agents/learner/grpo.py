"""Group-relative advantages (GRPO-style outcome advantages) and the policy-gradient loss.

A group is the plays of one environment instance: the same ``env_id``,
``group`` index and ``seed``, in either arm. Mixing the arms in a group is
deliberate: once the learner reads hints, hinted plays win where unhinted
ones fail, and the advantage of the hinted wins also teaches the features the
two arms share (what the learner would need without the hint) -- a group of
one arm only would have zero variance and teach nothing. Each episode's
advantage is its return minus the group mean, divided by the group's standard
deviation; a group whose returns are all equal teaches nothing and gets zero.
Episodes alone in their group (e.g. replayed or ungrouped plays) are pooled
with the other lone episodes of the same environment, so an update
fed arbitrary episodes still has a baseline.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from ...rollout.records import Episode

GroupKey = tuple


def group_key(episode: Episode) -> GroupKey:
    return (episode.env_id, episode.group, episode.seed)


def group_advantages(episodes: Sequence[Episode], eps: float = 1e-6) -> list[float]:
    """One advantage per episode (in order); unscored episodes (infrastructure failures) get 0."""
    groups: dict[GroupKey, list[int]] = defaultdict(list)
    for i, ep in enumerate(episodes):
        if ep.scored:
            groups[group_key(ep)].append(i)
    pooled: dict[GroupKey, list[int]] = defaultdict(list)
    for key, members in list(groups.items()):
        if len(members) == 1:
            del groups[key]
            pooled[key[0]].extend(members)
    advantages = [0.0] * len(episodes)
    for members in [*groups.values(), *pooled.values()]:
        returns = np.array([episodes[i].ret for i in members], dtype=np.float64)
        std = returns.std()
        if len(members) < 2 or std < eps:
            continue
        for i, a in zip(members, (returns - returns.mean()) / (std + eps)):
            advantages[i] = float(a)
    return advantages


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
