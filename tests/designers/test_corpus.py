"""Grounding corpora: JSONL with text or orig_doc, clear errors, seeded sampling."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from spadegym.designers.corpus import Corpus, CorpusError, truncate_words


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_text_and_orig_doc_fields(tmp_path: Path) -> None:
    path = write(tmp_path, [json.dumps({"text": "About levers."}), "",
                            json.dumps({"orig_doc": "About tides.", "id": "tide-1"})])
    corpus = Corpus.load(path)
    assert [(d.doc_id, d.text) for d in corpus.documents] == [("docs:1", "About levers."),
                                                              ("tide-1", "About tides.")]


@pytest.mark.parametrize(("line", "fragment"), [
    ("{not json", "line 2 is not valid JSON"),
    ("[1, 2]", "line 2 is a JSON list"),
    (json.dumps({"title": "no text"}), "line 2 has no non-empty 'text' or 'orig_doc'"),
    (json.dumps({"text": "   "}), "line 2 has no non-empty"),
])
def test_bad_line_names_file_and_line(tmp_path: Path, line: str, fragment: str) -> None:
    path = write(tmp_path, [json.dumps({"text": "fine"}), line])
    with pytest.raises(CorpusError) as err:
        Corpus.load(path)
    assert str(path) in str(err.value) and fragment in str(err.value)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist"):
        Corpus.load(tmp_path / "nope.jsonl")
    with pytest.raises(CorpusError, match="holds no documents"):
        Corpus.load(write(tmp_path, [""]))


def test_default_corpus_ships_short_original_documents() -> None:
    corpus = Corpus.default()
    assert 40 <= len(corpus) <= 60
    assert len({d.doc_id for d in corpus.documents}) == len(corpus)
    assert all(80 <= len(d.text.split()) <= 250 for d in corpus.documents)


def test_sampling_is_seeded() -> None:
    corpus = Corpus.default()
    first = [corpus.sample(random.Random(7)).doc_id for _ in range(3)]
    assert len(set(first)) == 1
    drawn = {corpus.sample(random.Random(seed)).doc_id for seed in range(30)}
    assert len(drawn) > 10


def test_truncate_words() -> None:
    assert truncate_words("a b  c d", 2) == "a b ..."
    assert truncate_words(" a b ", 5) == "a b"
    assert truncate_words("a b c", 0) == "a b c"
