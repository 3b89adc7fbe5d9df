"""Handed-over JSON is bounded in size and depth before it is parsed: one ValueError, never a RecursionError."""

from __future__ import annotations

import pytest

from spadegym.jsondata import UntrustedJSONError, depth, loads


def test_a_document_nested_past_the_bound_is_refused_in_one_sentence():
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(UntrustedJSONError, match="the store is nested 100000 levels deep"):
        loads(deep, "the store")


def test_brackets_inside_strings_are_text_not_nesting():
    text = '{"a": "' + "[" * 500 + '\\"[[["}'
    assert depth(text) == 1
    assert loads(text)["a"].startswith("[[[")


def test_size_and_encoding_are_checked_before_parsing():
    with pytest.raises(UntrustedJSONError, match="more than the 10 allowed"):
        loads("[" + "1," * 20 + "1]", max_bytes=10)
    with pytest.raises(UntrustedJSONError, match="not UTF-8"):
        loads(b'"\xff"')
    with pytest.raises(UntrustedJSONError, match="not valid JSON"):
        loads("{", "the reply")


def test_ordinary_documents_parse_as_json_does():
    assert loads('{"x": [1, 2.5, null, true, "\\u00e9"]}') == {"x": [1, 2.5, None, True, "é"]}
