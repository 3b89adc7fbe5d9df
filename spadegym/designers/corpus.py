"""Grounding documents for the LLM designer.

A corpus is a JSONL file: one JSON object per line with the document in
``text`` (or ``orig_doc``, as in SPICE-format corpora) and optionally an
``id`` and a ``title``. Each proposal draws a fresh document (seeded) so the
designer keeps writing about different things instead of the same maze game.
The package ships a small default corpus so grounding works out of the box.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import UserError

TEXT_FIELDS = ("text", "orig_doc")
DEFAULT_CORPUS = "corpus.jsonl"


class CorpusError(UserError, ValueError):
    """The corpus file cannot be used: the message names the file and line."""


@dataclass(frozen=True)
class Document:
    doc_id: str
    text: str
    title: str = ""


def truncate_words(text: str, max_words: int) -> str:
    """The first ``max_words`` words of ``text`` (whitespace kept within that span)."""
    words = text.split()
    if max_words <= 0 or len(words) <= max_words:
        return text.strip()
    return " ".join(words[:max_words]) + " ..."


class Corpus:
    """An in-memory list of documents with seeded sampling."""

    def __init__(self, documents: list[Document], name: str = "corpus"):
        if not documents:
            raise CorpusError(f"{name} holds no documents; add lines with a 'text' field.")
        self.documents = documents
        self.name = name

    def __len__(self) -> int:
        return len(self.documents)

    def sample(self, rng: random.Random) -> Document:
        return self.documents[rng.randrange(len(self.documents))]

    @classmethod
    def load(cls, path: str | Path) -> Corpus:
        """Read a JSONL corpus; any bad line is a ``CorpusError`` naming file and line."""
        p = Path(path)
        try:
            lines = p.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise CorpusError(f"corpus file {p} does not exist; check the --corpus path.") from None
        except UnicodeDecodeError:
            raise CorpusError(f"corpus file {p} is not UTF-8 text; save it as UTF-8 JSONL.") from None
        except OSError as exc:
            raise CorpusError(f"corpus file {p} cannot be read ({exc.strerror}).") from None
        return cls(parse_lines(lines, str(p), p.stem), name=str(p))

    @classmethod
    def default(cls) -> Corpus:
        """The small corpus shipped with spadegym (math, science, everyday procedures)."""
        text = resources.files("spadegym").joinpath("data").joinpath(DEFAULT_CORPUS).read_text(encoding="utf-8")
        return cls(parse_lines(text.splitlines(), DEFAULT_CORPUS, "default"), name=DEFAULT_CORPUS)


def parse_lines(lines: list[str], where: str, stem: str) -> list[Document]:
    documents: list[Document] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{where} line {number} is not valid JSON ({exc.msg}); "
                              "write one JSON object per line.") from None
        if not isinstance(record, dict):
            raise CorpusError(f"{where} line {number} is a JSON {type(record).__name__}, not an object; "
                              "write one object with a 'text' field per line.")
        text = next((record[f] for f in TEXT_FIELDS if isinstance(record.get(f), str) and record[f].strip()),
                    None)
        if text is None:
            raise CorpusError(f"{where} line {number} has no non-empty 'text' or 'orig_doc' string; "
                              "add the document text under 'text'.")
        doc_id = str(record.get("id") or f"{stem}:{number}")
        documents.append(Document(doc_id, text, str(record.get("title") or "")))
    return documents
