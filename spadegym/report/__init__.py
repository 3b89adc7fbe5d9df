"""The HTML report of a run, built only from its store (so any run can be re-reported).

from spadegym.report import write_report
path = write_report("runs/demo")   # -> runs/demo/report.html
"""

from __future__ import annotations

import os
from pathlib import Path

from ..outputs import write_text
from ..store import RunStore
from .data import RunData, read_run

REPORT_NAME = "report.html"
SAMPLE_TRANSCRIPTS = 2  # per environment: one without and one with the hint


def write_report(run_dir: str | Path) -> Path:
    """Write ``run_dir/report.html`` from the run store and return its path."""
    with RunStore.open(run_dir) as store:
        from .page import render  # matplotlib loads only once there is a run to draw

        data = read_run(store)

        def transcripts(env_id: str) -> list[dict]:
            sample = store.episodes(env_id=env_id, hinted=False, split="train", limit=1)
            sample += store.episodes(env_id=env_id, hinted=True, split="train", limit=1)
            return sample[:SAMPLE_TRANSCRIPTS]

        html = render(Path(run_dir).resolve().name, data, transcripts)
        target = store.dir / REPORT_NAME
    tmp = target.with_suffix(".html.tmp")
    write_text(tmp, html, root=store.dir)  # never through a link planted in the run directory
    os.replace(tmp, target)  # a reader never sees a half-written page
    return target


__all__ = ["REPORT_NAME", "RunData", "read_run", "write_report"]
