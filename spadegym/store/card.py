"""A dataset card: the README.md with the Hub's YAML metadata that explains an exported run's tables.

    write_card(folder, run_dir, tables)      # README.md beside the exported tables

The card follows the Hub's dataset card format (YAML metadata between ``---``
lines, then Markdown): tags, size category, one config per table pointing at
its file, and a body saying what each table holds and how the run was made.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from ..outputs import write_text
from .runstore import RunStore

#: What each exported table holds, for the card.
TABLES = {
    "envs": "one row per valid environment: its code, hint, skill, family and knobs, lineage and latest scores",
    "episodes": "one row per episode: the transcript as chat messages, return, success, hint arm, seed",
    "rounds": "one row per round: the round summary (win rates, regret, designer reward, buffer, timings)",
}
#: The most of one stored setting, or of a run's name, the card shows.
SHOWN_CHARS = 200


def _size_category(rows: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < limit:
            return name
    return "n>1M"


#: The Hub's task categories for a run's tables: levels to train agents on, transcripts of model replies.
TASK_CATEGORIES = ["reinforcement-learning", "text-generation"]
#: The card's license unless the user names one: who may use the data is theirs to say, not spadegym's.
DEFAULT_LICENSE = "unknown"


def dataset_card(tables: dict[str, int], source: dict[str, Any], data_files: dict[str, str] | None = None,
                 license: str = DEFAULT_LICENSE) -> str:
    """The card's text: ``tables`` maps each exported table to its row count; ``source`` says what run made them;
    ``license`` is a Hub license id (apache-2.0, cc-by-4.0, ...)."""
    from huggingface_hub import DatasetCardData

    configs = [{"config_name": name, "data_files": path} for name, path in (data_files or {}).items()]
    data = DatasetCardData(pretty_name=f"spadegym {_plain_name(source['name'])}", license=license,
                           task_categories=TASK_CATEGORIES, tags=["spadegym", "self-play",
                           "reinforcement-learning", "synthetic-environments", "text-games"],
                           size_categories=_size_category(max(tables.values(), default=0)),
                           **({"configs": configs} if configs else {}))
    lines = [f"# spadegym {_plain_name(source['name'])}", "",
             f"Exported by spadegym {source['version']} from a run store ({source['kind']}).", "",
             "| table | rows | what it holds |", "|---|---|---|"]
    lines += [f"| `{name}` | {rows:,} | {TABLES[name]} |" for name, rows in tables.items()]
    lines += ["", "## How it was made", ""]
    lines += _settings_block(source["settings"])
    lines += ["", "## Notes", "",
              "- An environment is a standalone Python file (standard library only); it is untrusted code: run it in a "
              "sandbox (`spadegym play FILE`), never in your own process.",
              "- A return is an episode's terminal reward, not a sum; a win (`success`) is the full reward (1.0).",
              "- Nested values (knobs, lineage, meta) are JSON text columns.", ""]
    return f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines)


def _plain_name(name: Any) -> str:
    """A run's name as card text: one line, bounded, HTML escaped (a folder name is anyone's text)."""
    return html.escape(" ".join(str(name).split())[:SHOWN_CHARS])


def _settings_block(settings: dict[str, Any]) -> list[str]:
    """The stored settings as a fenced JSON block: stored text is data, so each value is cut to SHOWN_CHARS, and
    JSON with ``<``, ``>`` and ``&`` escaped keeps any HTML or second front matter from surviving as such (its
    strings hold no raw newline, and no line of it starts with ``---``); the fence is longer than any backtick run."""
    shown = {str(key)[:SHOWN_CHARS]: _shown(value) for key, value in settings.items()}
    text = json.dumps(shown, indent=1, ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", text)), default=0))
    return [f"{fence}json", text, fence]


def _shown(value: Any) -> Any:
    """A setting as the card shows it: itself when short, else its first SHOWN_CHARS characters as text."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return value if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def run_source(store: RunStore) -> dict[str, Any]:
    """What the card says of the run a store holds: its name, kind, spadegym's version and main settings."""
    config = store.config
    keys = ("designer", "agent", "designer_reward", "rounds", "seed")
    return source_facts(store.dir, "a self-play run", {key: config[key] for key in keys if key in config})


def source_facts(path: Path, kind: str, settings: dict[str, Any]) -> dict[str, Any]:
    from .. import __version__

    return {"name": Path(path).resolve().name, "kind": kind, "version": __version__, "settings": settings}


def write_card(folder: Path, run_dir: str | Path, tables: list[str], data_files: dict[str, str] | None = None,
               root: Path | None = None, license: str = DEFAULT_LICENSE) -> Path:
    """Write ``folder/README.md``, the card of the ``tables`` exported from the run in ``run_dir`` (inside
    ``root``, default ``folder``, following no link below it)."""
    with RunStore.open(run_dir) as store:
        counts = {"envs": lambda: len(store.environments(valid_only=True)), "episodes": store.episode_count,
                  "rounds": lambda: len(store.rounds())}
        text = dataset_card({name: counts[name]() for name in tables}, run_source(store), data_files, license)
    return write_text(folder / "README.md", text, root or folder)
