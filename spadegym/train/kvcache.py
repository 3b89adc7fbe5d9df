"""Each live episode keeps its key/value cache between turns, so a turn encodes only its new tokens.

An episode's token sequence only grows (``tokens.Trace``): the keys and values
computed for its first tokens at one turn hold for every later turn. A
``PrefixCache`` keeps, per episode, the ids it has encoded and their keys and
values (one pair of tensors per layer, batch dimension dropped), bounded in
bytes; the least recently used go first, and an evicted episode is encoded
from its start again (slower, nothing else changes).

One generation batch lays its rows out as transformers expects a continued
generation: the cached prefixes, left-padded to the longest, form one
``DynamicCache``; the new tokens, left-padded too, are the input; the
attention mask covers both, with zeros on the padding, so every real token
keeps the position it has in its own sequence. ``Batch.prefixes`` takes each
row's tokens back out of the grown cache after ``model.generate``.

Cached keys were computed by the weights of their time: the policy empties
the cache whenever its weights change (an update, a checkpoint loaded).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any


def reusable(model: Any) -> bool:
    """Whether the model's cache holds every past token of every layer (no sliding window, no linear attention),
    so that a row can be cut out of it and continued later."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    try:
        layers = DynamicCache(config=model.config).layers
    except Exception:  # a model without a standard cache: encode every turn whole
        return False
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


@dataclass
class Prefix:
    """The first ``len(ids)`` tokens of one sequence with their keys and values per layer ([heads, tokens, dim])."""

    ids: list[int]
    layers: list[tuple[Any, Any]]

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes + v.nbytes for k, v in self.layers)


class PrefixCache:
    """Prefixes by an opaque key (one per live episode), at most ``budget`` bytes, least recently used evicted first.

    A prefix looked up since the last ``tick`` is in use and never evicted: live episodes take their turns
    in a cycle, and evicting the least recently used of a cycle that does not fit would evict every
    prefix before its next use. When the rows in use do not fit, the newest prefix is not kept instead.
    """

    #: Shared beginnings kept at once (the newest): a run's prompts start with one or two system prompts.
    SHARED = 4

    def __init__(self, budget: int):
        self.budget = budget
        self._entries: OrderedDict[Hashable, Prefix] = OrderedDict()
        self._shared: OrderedDict[tuple[int, ...], Prefix] = OrderedDict()
        self._used: dict[Hashable, int] = {}  # key -> the tick of its last lookup
        self._tick = 0
        self.nbytes = 0
        self.evicted = 0

    def tick(self) -> None:
        """A new round of lookups begins (one generation call): earlier uses no longer protect a prefix."""
        self._tick += 1

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, key: Hashable, ids: Sequence[int]) -> Prefix | None:
        """The key's prefix if it starts ``ids`` and leaves at least one token to encode (the next token's logits)."""
        prefix = self._entries.get(key)
        if prefix is None:
            return None
        n = len(prefix.ids)
        if n >= len(ids) or list(ids[:n]) != prefix.ids:  # not a prefix of this sequence: never reuse it
            self.drop(key)
            return None
        self._entries.move_to_end(key)
        self._used[key] = self._tick
        return prefix

    def store(self, key: Hashable, prefix: Prefix) -> bool:
        """Keep ``prefix`` under ``key`` (replacing the key's old one); False when it does not fit."""
        self.drop(key)
        size = prefix.nbytes
        while self._entries and self.nbytes + size > self.budget:
            oldest = next(iter(self._entries))
            if self._used.get(oldest, -1) >= self._tick:
                break  # in use by this call: keep it
            self.drop(oldest)
            self.evicted += 1
        if self.nbytes + size > self.budget:
            return False
        self._entries[key] = prefix
        self._used[key] = self._tick
        self.nbytes += size
        return True

    def drop(self, key: Hashable) -> None:
        old = self._entries.pop(key, None)
        self._used.pop(key, None)
        if old is not None:
            self.nbytes -= old.nbytes

    def clear(self) -> None:
        self._entries.clear()
        self._used.clear()
        self._shared.clear()
        self.nbytes = 0

    def share(self, prefix: Prefix) -> None:
        """Keep ``prefix`` as a beginning any sequence may continue from (the oldest of more than ``SHARED`` goes)."""
        old = self._shared.pop(tuple(prefix.ids), None)
        self._shared[tuple(prefix.ids)] = prefix
        self.nbytes += prefix.nbytes - (old.nbytes if old else 0)
        while len(self._shared) > self.SHARED:
            _, old = self._shared.popitem(last=False)
            self.nbytes -= old.nbytes

    def shared_for(self, ids: Sequence[int], limit: int | None = None) -> Prefix | None:
        """The longest shared beginning of ``ids`` that leaves at least one token to encode (``limit``: that holds
        at most this many tokens instead)."""
        best = None
        most = len(ids) - 1 if limit is None else limit
        for prefix in self._shared.values():
            n = len(prefix.ids)
            if n <= most and (best is None or n > len(best.ids)) and list(ids[:n]) == prefix.ids:
                best = prefix
        return best


def common_prefix(sequences: Sequence[Sequence[int]]) -> int:
    """The length of the longest beginning all ``sequences`` share, one token short of the shortest."""
    shortest = min(len(s) for s in sequences) - 1
    first = sequences[0]
    n = 0
    while n < shortest and all(s[n] == first[n] for s in sequences):
        n += 1
    return n


@dataclass
class Batch:
    """One generation batch: the new tokens as input, the cached prefixes as a cache, one mask over both."""

    input_ids: Any  # [rows, new] left-padded
    attention_mask: Any  # [rows, cached + new]
    cache: Any  # a DynamicCache holding the prefixes (``cached`` wide); generation grows it
    cached: int  # width of the cache part
    starts: list[int]  # per row: the cached tokens it reuses

    @classmethod
    def build(cls, prompts: Sequence[list[int]], prefixes: Sequence[Prefix | None], pad: int, device: Any) -> Batch:
        import torch
        from transformers import DynamicCache

        starts = [len(p.ids) if p is not None else 0 for p in prefixes]
        cached = max(starts)
        news = [prompt[start:] for prompt, start in zip(prompts, starts)]
        width = max(len(n) for n in news)
        rows = len(prompts)
        input_ids = torch.full((rows, width), pad, dtype=torch.long)
        mask = torch.zeros((rows, cached + width), dtype=torch.long)
        for i, (new, start) in enumerate(zip(news, starts)):
            input_ids[i, width - len(new):] = torch.tensor(new)
            mask[i, cached - start:cached] = 1
            mask[i, cached + width - len(new):] = 1
        layers = []
        if cached:
            first = next(p for p in prefixes if p is not None)
            for layer, (k0, v0) in enumerate(first.layers):
                keys = k0.new_zeros((rows, k0.shape[0], cached, k0.shape[-1]))
                values = v0.new_zeros((rows, v0.shape[0], cached, v0.shape[-1]))
                for i, p in enumerate(prefixes):
                    if p is not None:
                        k, v = p.layers[layer]
                        keys[i, :, cached - starts[i]:] = k
                        values[i, :, cached - starts[i]:] = v
                layers.append((keys.to(device), values.to(device)))
        cache = DynamicCache(ddp_cache_data=layers) if layers else DynamicCache()
        return cls(input_ids.to(device), mask.to(device), cache, cached, starts)

    def prefixes(self, prompts: Sequence[list[int]], sampled: Sequence[list[int]]) -> list[Prefix]:
        """Each row's whole prompt and the sampled tokens the grown cache holds, as prefixes to keep."""
        import torch

        cache = self.cache
        total = cache.get_seq_length()
        width = self.input_ids.shape[1]
        fed = total - self.cached - width  # sampled tokens fed back (every one but the last)
        out = []
        for i, (prompt, ids) in enumerate(zip(prompts, sampled)):
            new = len(prompt) - self.starts[i]
            kept = min(len(ids), fed)
            where = torch.cat([torch.arange(self.cached - self.starts[i], self.cached),
                               torch.arange(self.cached + width - new, self.cached + width + kept)])
            where = where.to(cache.layers[0].keys.device)
            layers = [(layer.keys[i].index_select(1, where), layer.values[i].index_select(1, where))
                      for layer in cache.layers]
            out.append(Prefix(list(prompt) + list(ids[:kept]), layers))
        return out
