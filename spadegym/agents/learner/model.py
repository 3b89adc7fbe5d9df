"""The scorer: a small wide-and-deep network over hashed features, in numpy.

For an observation o and a candidate action a with sparse feature vectors
x_o and x_oa (see ``features``)::

    z     = E^T x_o + E^T x_a + b               (an embedding bag; E is 2**bits x hidden)
    score = w . relu(z) + u . (x_a + x_cross)     (deep part + wide linear part)

where x_a holds the action and overlap features and x_cross the (many)
cross features, which only the wide part reads, and the policy is the
softmax of the scores over the valid actions. The observation bag is
computed once per view and shared by its actions, so a batch costs one
gather per feature entry. The wide part learns single-feature
rules (a cross or overlap feature) in a few updates; the hidden layer learns
their conjunctions.

Sparse rows of E and u are updated with lazy Adam (only the rows a batch
touched), so an update costs what the batch touches, not the table size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .features import ViewFeatures


@dataclass
class Batch:
    """Many decisions' views flattened into segment arrays (one segment per view, one per pair).

    A view read by several decisions (the plays of a group start alike, a hinted play's decision is imitated
    without its hint) is held once: the network runs on the distinct views, and the ``decision_*`` arrays lay
    each decision's actions out over them (``decision_pairs``: the batch pair of each decision's action).
    """

    obs_idx: np.ndarray
    obs_val: np.ndarray
    obs_seg: np.ndarray  # view index of each obs entry
    obs_starts: np.ndarray
    pair_idx: np.ndarray
    pair_val: np.ndarray
    pair_seg: np.ndarray  # pair index of each pair entry
    pair_starts: np.ndarray
    pair_view: np.ndarray  # view index of each pair
    cross_idx: np.ndarray
    cross_val: np.ndarray
    cross_seg: np.ndarray  # pair index of each cross entry
    view_starts: np.ndarray  # first pair of each view
    sizes: np.ndarray  # actions per view
    decision_view: np.ndarray  # view index of each decision
    decision_starts: np.ndarray  # first decision pair of each decision
    decision_pairs: np.ndarray  # batch pair of each decision pair
    decision_pair_view: np.ndarray  # decision index of each decision pair
    _sums: dict[str, RowSum] = field(default_factory=dict, repr=False)  # per table: cached by row_sum

    def row_sum(self, table: str) -> RowSum:
        """How to sum this batch's gradient entries per parameter row (sorted once, reused every epoch)."""
        if table not in self._sums:
            if table == "E":  # entries read the observation's bag (one row per view) or their pair's
                rows, vals = np.concatenate([self.obs_idx, self.pair_idx]), np.concatenate([self.obs_val, self.pair_val])
                source = np.concatenate([self.obs_seg, len(self.sizes) + self.pair_seg])
            else:
                rows, vals = np.concatenate([self.pair_idx, self.cross_idx]), np.concatenate([self.pair_val, self.cross_val])
                source = np.concatenate([self.pair_seg, self.cross_seg])
            self._sums[table] = RowSum.of(rows, vals, source)
        return self._sums[table]


@dataclass
class RowSum:
    """A sort of gradient entries by parameter row: sum equal rows with sort + reduceat
    (deterministic, no scatter-add).

    Entry i's gradient is ``values[i] * upstream[source[i]]``; both are kept in the sorted order, so each
    backward pass gathers its entries straight into that order (the same products, summed in the same order).
    """

    values: np.ndarray  # each sorted entry's feature value
    source: np.ndarray  # each sorted entry's row of the upstream gradient
    starts: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, rows: np.ndarray, values: np.ndarray, source: np.ndarray) -> RowSum:
        order = stable_order(rows)
        sorted_rows = rows[order]
        starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
        return cls(values[order], source[order], starts, sorted_rows[starts])

    def __call__(self, upstream: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows and their summed gradients, given the gradient of what each entry feeds."""
        values = self.values[:, None] if upstream.ndim == 2 else self.values
        return self.rows, np.add.reduceat(values * np.take(upstream, self.source, axis=0), self.starts, axis=0)


def stable_order(rows: np.ndarray) -> np.ndarray:
    """``np.argsort(rows, kind="stable")`` for row numbers below 2**32, by 16-bit digits (numpy radix-sorts
    16-bit keys, far faster than a stable sort of 64-bit ones); the same order, so the same sums."""
    if len(rows) == 0 or int(rows.max()) < 1 << 16:
        return np.argsort(rows.astype(np.uint16), kind="stable")
    order = np.argsort((rows & 0xFFFF).astype(np.uint16), kind="stable")
    return order[np.argsort((rows[order] >> 16).astype(np.uint16), kind="stable")]


def make_batch(decided: list[ViewFeatures]) -> Batch:
    """The batch of the decisions' views (one per decision, in order); a view object given twice is held once."""
    first: dict[int, int] = {}
    decision_view = np.array([first.setdefault(id(v), len(first)) for v in decided], dtype=np.int64)
    views = list({id(v): v for v in decided}.values())
    obs_len = np.array([len(v.obs_idx) for v in views], dtype=np.int64)
    sizes = np.array([len(v.pair_len) for v in views], dtype=np.int64)
    pair_lens = np.concatenate([v.pair_len for v in views])
    cross_lens = np.concatenate([v.cross_len for v in views])
    view_starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    decision_sizes = sizes[decision_view]
    decision_starts = np.concatenate([[0], np.cumsum(decision_sizes)[:-1]])
    decision_pairs = (np.repeat(view_starts[decision_view] - decision_starts, decision_sizes)
                      + np.arange(int(decision_sizes.sum())))
    return Batch(
        obs_idx=np.concatenate([v.obs_idx for v in views]),
        obs_val=np.concatenate([v.obs_val for v in views]),
        obs_seg=np.repeat(np.arange(len(views)), obs_len),
        obs_starts=np.concatenate([[0], np.cumsum(obs_len)[:-1]]),
        pair_idx=np.concatenate([v.pair_idx for v in views]),
        pair_val=np.concatenate([v.pair_val for v in views]),
        pair_seg=np.repeat(np.arange(len(pair_lens)), pair_lens),
        pair_starts=np.concatenate([[0], np.cumsum(pair_lens)[:-1]]),
        pair_view=np.repeat(np.arange(len(views)), sizes),
        cross_idx=np.concatenate([v.cross_idx for v in views]),
        cross_val=np.concatenate([v.cross_val for v in views]),
        cross_seg=np.repeat(np.arange(len(cross_lens)), cross_lens),
        view_starts=view_starts,
        sizes=sizes,
        decision_view=decision_view,
        decision_starts=decision_starts,
        decision_pairs=decision_pairs,
        decision_pair_view=np.repeat(np.arange(len(decided)), decision_sizes),
    )


@dataclass
class Forward:
    """What the backward pass needs from the forward pass."""

    batch: Batch
    z: np.ndarray  # (pairs, hidden) pre-activations
    h: np.ndarray  # (pairs, hidden)
    scores: np.ndarray  # (pairs,)
    probs: np.ndarray  # (pairs,) softmax within each view
    logp: np.ndarray  # (pairs,)


class Scorer:
    """Parameters, forward, backward and a lazy Adam step."""

    SPARSE = ("E", "u")
    DENSE = ("b", "w")

    def __init__(self, bits: int, hidden: int, seed: int, init_scale: float = 0.5,
                 wide_priors: dict[int, float] | None = None):
        self.bits, self.hidden, self.seed, self.init_scale = bits, hidden, seed, init_scale
        self.wide_priors = dict(wide_priors or {})  # row of u -> its initial weight (an innate rule)
        self.params = self._initial_params()
        self.touched = np.zeros(1 << bits, dtype=bool)  # rows ever updated (what a checkpoint stores)
        self.m = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.v = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.step = 0

    def _initial_params(self) -> dict[str, np.ndarray]:
        # Regenerated from the seed on load: checkpoints store only the rows training changed.
        rng = np.random.default_rng([self.seed, 7])
        rows = 1 << self.bits
        params = {
            "E": (rng.standard_normal((rows, self.hidden), dtype=np.float32) * self.init_scale),
            "u": np.zeros(rows, dtype=np.float32),
            "b": np.full(self.hidden, 0.1, dtype=np.float32),
            "w": (rng.standard_normal(self.hidden, dtype=np.float32) * 0.1 / np.sqrt(self.hidden)),
        }
        for row, weight in self.wide_priors.items():
            params["u"][row] = weight
        return params

    # -- forward --------------------------------------------------------------
    def forward(self, batch: Batch, temperature: float = 1.0) -> Forward:
        E, u, b, w = (self.params[k] for k in ("E", "u", "b", "w"))
        z_obs = np.add.reduceat(E[batch.obs_idx] * batch.obs_val[:, None], batch.obs_starts, axis=0)
        z_pair = np.add.reduceat(E[batch.pair_idx] * batch.pair_val[:, None], batch.pair_starts, axis=0)
        z = z_pair + z_obs[batch.pair_view] + b
        h = np.maximum(z, 0.0)
        wide = np.add.reduceat(u[batch.pair_idx] * batch.pair_val, batch.pair_starts)
        # Cross segments may be empty (an observation without words): bincount, not reduceat.
        wide += np.bincount(batch.cross_seg, u[batch.cross_idx] * batch.cross_val, minlength=len(wide))
        scores = (h @ w + wide) / temperature
        top = np.maximum.reduceat(scores, batch.view_starts)
        shifted = scores - top[batch.pair_view]
        e = np.exp(shifted)
        total = np.add.reduceat(e, batch.view_starts)
        logp = shifted - np.log(total)[batch.pair_view]
        return Forward(batch, z, h, scores, np.exp(logp), logp)

    # -- backward -------------------------------------------------------------
    def gradients(self, fwd: Forward, d_scores: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray] | np.ndarray]:
        """Gradients given dLoss/dscore per pair: dense arrays for b, w; (rows, values) for E, u."""
        batch, w = fwd.batch, self.params["w"]
        dw = fwd.h.T @ d_scores
        dz = (d_scores[:, None] * w[None, :]) * (fwd.z > 0)
        db = dz.sum(axis=0)
        dz_obs = np.add.reduceat(dz, batch.view_starts, axis=0)
        e_rows, e_vals = batch.row_sum("E")(np.concatenate([dz_obs, dz]))
        u_rows, u_vals = batch.row_sum("u")(d_scores)
        return {"E": (e_rows, e_vals), "u": (u_rows, u_vals), "b": db, "w": dw}

    def apply(self, grads: dict, lr: float, clip: float, betas: tuple[float, float] = (0.9, 0.999),
              eps: float = 1e-8) -> float:
        """One lazy-Adam step (global-norm clipping); returns the gradient norm before clipping."""
        sq = sum(float(np.sum(g[1] ** 2)) if k in self.SPARSE else float(np.sum(g ** 2)) for k, g in grads.items())
        norm = sq ** 0.5
        scale = min(1.0, clip / norm) if norm > 0 else 1.0
        self.step += 1
        b1, b2 = betas
        c1, c2 = 1 - b1 ** self.step, 1 - b2 ** self.step
        for key, g in grads.items():
            p, m, v = self.params[key], self.m[key], self.v[key]
            if key in self.SPARSE:
                rows, vals = g
                vals = vals * scale
                # Each table's rows gathered once; the moments in the table's precision, as stored.
                m_rows = (b1 * m[rows] + (1 - b1) * vals).astype(m.dtype, copy=False)
                v_rows = (b2 * v[rows] + (1 - b2) * vals * vals).astype(v.dtype, copy=False)
                m[rows], v[rows] = m_rows, v_rows
                p[rows] -= lr * (m_rows / c1) / (np.sqrt(v_rows / c2) + eps)
                self.touched[rows] = True
            else:
                g = g * scale
                m[:] = b1 * m + (1 - b1) * g
                v[:] = b2 * v + (1 - b2) * g * g
                p -= lr * (m / c1) / (np.sqrt(v / c2) + eps)
        return norm

    # -- checkpoint -----------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        rows = np.flatnonzero(self.touched)
        out: dict[str, np.ndarray] = {"rows": rows}
        for key in self.params:
            for prefix, table in (("p_", self.params), ("m_", self.m), ("v_", self.v)):
                out[prefix + key] = table[key][rows] if key in self.SPARSE else table[key]
        return out

    def load_state(self, state: dict[str, np.ndarray], step: int) -> None:
        rows = state["rows"]
        for key in self.params:
            for prefix, table in (("p_", self.params), ("m_", self.m), ("v_", self.v)):
                if key in self.SPARSE:
                    table[key][rows] = state[prefix + key]
                else:
                    table[key][:] = state[prefix + key]
        self.touched[rows] = True
        self.step = step
