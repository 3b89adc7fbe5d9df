"""Constrained decoding of an edit on a local model: the reply can only be one of the form's allowed edits.

The language of an ``EditForm`` is small and closed (an operator, then one to
``max_changes`` names in the space's order, each with one of its values), so it
is kept as a character automaton built lazily, state by state, and a model's
vocabulary as a character trie. Walking both together gives the tokens that keep
a reply inside the language: a few dozen at a choice, found in microseconds.

Between choices the text is fixed (``", "changes": {"``): there a row gets one
token, the longest that spells the next stretch of fixed text, and that token is
marked *forced*. Forced tokens carry no loss when the completion trains (like a
reply prefix): the designer's reward says nothing about punctuation it could not
have changed, only about its choices.

    decoder = EditDecoder(form, Vocabulary.of(tokenizer))   # one per parent; rows share its memo
    row = decoder.row()                                     # one per sampled reply
    row.allowed()  -> token ids;  row.advance(token_id);  row.forced  -> one flag per token so far

Works with tokenizers whose tokens decode alone to the text they add (byte-level
BPE: SmolLM2, Qwen, Llama 3, GPT-2); other tokens are left out of the trie.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from typing import Any

from .edit_form import EditForm

State = Hashable
Edges = Callable[[State], list[tuple[str, State | None]]]  # state -> (text, next state or None: the reply ends)


class _Trie:
    __slots__ = ("children", "then", "ids")

    def __init__(self) -> None:
        self.children: dict[str, _Trie] = {}
        self.then: list[State | None] = []  # grammar: where an edge ending here continues (None: accept)
        self.ids: list[int] = []  # vocabulary: the tokens that spell the path to here


_DONE = _Trie()  # the accepting position: nothing may follow but the end of the reply


class CharGrammar:
    """A finite language as states with text edges, read one character at a time (see the module docstring)."""

    def __init__(self, edges: Edges, start: State):
        self._edges = edges
        self._roots: dict[State, _Trie] = {}
        self.start = self._closure([self._root(start)])

    def _root(self, state: State) -> _Trie:
        if state not in self._roots:
            root = _Trie()
            for text, then in self._edges(state):
                node = root
                for ch in text:
                    node = node.children.setdefault(ch, _Trie())
                node.then.append(then)
            self._roots[state] = root
        return self._roots[state]

    def _closure(self, nodes: list[_Trie]) -> frozenset[_Trie]:
        out: set[_Trie] = set()
        todo = list(nodes)
        while todo:
            node = todo.pop()
            if node in out:
                continue
            out.add(node)
            todo += [_DONE if then is None else self._root(then) for then in node.then]
        return frozenset(out)

    def step(self, position: frozenset[_Trie], ch: str) -> frozenset[_Trie]:
        """Where ``ch`` leads from ``position`` (empty: outside the language)."""
        return self._closure([n.children[ch] for n in position if ch in n.children])

    @staticmethod
    def next_chars(position: frozenset[_Trie]) -> set[str]:
        return {ch for n in position for ch in n.children}

    @staticmethod
    def accepts(position: frozenset[_Trie]) -> bool:
        return _DONE in position

    def language(self, limit: int = 100_000) -> list[str]:
        """Every string of the language (for tests and sizes), up to ``limit``."""
        out: list[str] = []
        todo: list[tuple[frozenset[_Trie], str]] = [(self.start, "")]
        while todo and len(out) < limit:
            position, text = todo.pop()
            if self.accepts(position):
                out.append(text)
            todo += [(self.step(position, ch), text + ch) for ch in sorted(self.next_chars(position), reverse=True)]
        return out


def edit_grammar(form: EditForm) -> CharGrammar:
    """The replies ``form.reply`` writes: an operator, then 1..max_changes names in the space's order with a value."""
    rank = {name: i for i, name in enumerate(form.order)}

    def edges(state: Any) -> list[tuple[str, Any]]:
        kind = state[0]
        if kind == "start":
            return [('{"operator": ' + json.dumps(op) + ', "changes": {', ("name", op, 0, -1)) for op in form.operators]
        if kind == "name":
            _, op, count, last = state
            return [(json.dumps(name) + ": ", ("value", op, count, name)) for name in form.options[op]
                    if rank[name] > last]
        if kind == "value":
            _, op, count, name = state
            return [(json.dumps(value), ("after", op, count + 1, rank[name])) for value in form.options[op][name]]
        _, op, count, last = state  # "after": close, or one more name after the last
        more = count < form.max_changes and any(rank[name] > last for name in form.options[op])
        return [("}}", None), *([(", ", ("name", op, count, last))] if more else [])]

    return CharGrammar(edges, ("start",))


class Vocabulary:
    """A tokenizer's tokens as a character trie (the text each adds), built once per tokenizer."""

    _built: dict[int, tuple[Any, Vocabulary]] = {}

    def __init__(self, texts: dict[int, str], eos_id: int):
        self.eos_id = eos_id
        self.text = texts
        self.root = _Trie()
        for token_id, text in texts.items():
            node = self.root
            for ch in text:
                node = node.children.setdefault(ch, _Trie())
            node.ids.append(token_id)

    @classmethod
    def of(cls, tokenizer: Any) -> Vocabulary:
        """The vocabulary of ``tokenizer`` (printable ASCII tokens; special tokens left out), cached."""
        key = id(tokenizer)
        if key not in cls._built or cls._built[key][0] is not tokenizer:
            special = set(tokenizer.all_special_ids)
            texts = {}
            for token_id in range(len(tokenizer)):
                if token_id in special:
                    continue
                text = tokenizer.decode([token_id], clean_up_tokenization_spaces=False)
                if text and text.isascii() and text.isprintable():
                    texts[token_id] = text
            cls._built[key] = (tokenizer, cls(texts, tokenizer.eos_token_id))
        return cls._built[key][1]


class EditDecoder:
    """The constraint of one form over one vocabulary; its rows share what it has worked out."""

    def __init__(self, form: EditForm, vocabulary: Vocabulary):
        self.grammar = edit_grammar(form)
        self.vocabulary = vocabulary
        self._allowed: dict[frozenset[_Trie], tuple[list[int], bool]] = {}

    def row(self) -> EditRow:
        return EditRow(self)

    def allowed(self, position: frozenset[_Trie]) -> tuple[list[int], bool]:
        """(token ids, forced) at ``position``: the longest token of fixed text, else every token that fits."""
        if position not in self._allowed:
            self._allowed[position] = self._work_out(position)
        return self._allowed[position]

    def _work_out(self, position: frozenset[_Trie]) -> tuple[list[int], bool]:
        g, vocab = self.grammar, self.vocabulary
        fixed, at = "", position
        while not g.accepts(at) and len(chars := g.next_chars(at)) == 1:
            ch = next(iter(chars))
            fixed, at = fixed + ch, g.step(at, ch)
        if fixed:  # the longest token spelling the start of the fixed text
            node, best = vocab.root, None
            for ch in fixed:
                node = node.children.get(ch)
                if node is None:
                    break
                best = node.ids[0] if node.ids else best
            if best is not None:
                return [best], True
        if not g.next_chars(position):
            return [vocab.eos_id], True
        out: list[int] = [vocab.eos_id] if g.accepts(position) else []
        todo = [(vocab.root, position)]
        while todo:
            node, at = todo.pop()
            for ch in g.next_chars(at):
                child = node.children.get(ch)
                if child is None:
                    continue
                after = g.step(at, ch)
                out += child.ids
                todo.append((child, after))
        return out, False


class EditRow:
    """One sampled reply under an ``EditDecoder``: what it may write next, and which of its tokens were forced."""

    def __init__(self, decoder: EditDecoder):
        self.decoder = decoder
        self.position = decoder.grammar.start
        self.forced: list[bool] = []
        self.finished = False

    def allowed(self) -> list[int]:
        ids, forced = self.decoder.allowed(self.position)
        self.forced.append(forced)
        return ids

    def advance(self, token_id: int) -> None:
        """The token the row sampled (one of ``allowed()``)."""
        vocab = self.decoder.vocabulary
        if token_id == vocab.eos_id:
            self.finished = True
            return
        for ch in vocab.text.get(token_id, ""):
            self.position = self.decoder.grammar.step(self.position, ch)
        if not self.position:  # outside the language (a token the processor did not allow): stop constraining
            self.finished = True
