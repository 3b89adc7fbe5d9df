"""Experiment trackers: where a run's round scalars go, chosen like TRL's ``report_to``.

    report_to = ["tensorboard", "wandb", "trackio"]    # or ["all"] (every one installed), or ["none"]

Every tracker gets the same scalars at the same step (the round): those TensorBoard
shows (``summary_scalars``), after the round is committed to the store. A tracker
whose package is missing is skipped with a note. All of them work offline:

- ``tensorboard``: event files under ``<run>/tensorboard/``;
- ``wandb``: a run under ``<run>/wandb/``, offline unless ``WANDB_MODE`` says otherwise
  or ``WANDB_API_KEY`` is set (``tracking.wandb_mode`` decides when set); ``wandb sync``
  uploads an offline run later. A resumed run continues the same wandb run;
- ``trackio``: a local run (trackio keeps its database under ``TRACKIO_DIR``, else its
  own default), synced to a Hugging Face Space only when ``tracking.trackio_space`` names one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ..errors import install_hint
from ..store.record import RoundSummary
from .callbacks import RunCallback, RunStart, TensorBoardCallback
from .tensorboard import summary_scalars

#: The trackers ``report_to`` can name, in the order they are attached.
TRACKERS = ("tensorboard", "wandb", "trackio")


class TrackingConfig(BaseModel):
    """Settings of the wandb and trackio trackers (``report_to``)."""

    model_config = {"extra": "forbid"}

    # A project names a file (trackio's database) and a URL path (wandb): a plain name, never a path.
    project: str = Field("spadegym", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$", description="The wandb and trackio project a run's scalars go to (letters, digits, '_', '.', '-'; no path); each run is named after its directory.")
    wandb_mode: Literal["auto", "offline", "online"] = Field("auto", description="auto: WANDB_MODE when it is set, else online when WANDB_API_KEY is set, else offline (the run stays under <run>/wandb/; `wandb sync` uploads it later).")
    trackio_space: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$", description="A Hugging Face Space trackio syncs the run to, as owner/name (unset: local only).")

    @field_validator("project")
    @classmethod
    def _not_a_path(cls, project: str) -> str:
        if ".." in project:
            raise ValueError("a project is a plain name: '..' is not allowed in it")
        return project


def chosen(report_to: list[str]) -> list[str]:
    """The trackers ``report_to`` names, in attach order ('all': every installed one; 'none': none)."""
    names = set(report_to)
    if "none" in names:
        return []
    if "all" in names:
        names = {name for name in TRACKERS if installed(name)}
    return [name for name in TRACKERS if name in names]


def installed(name: str) -> bool:
    module = "tensorboard.summary.writer.event_file_writer" if name == "tensorboard" else name
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def tracker_callbacks(report_to: list[str], tracking: TrackingConfig,
                      settings: dict[str, Any]) -> tuple[list[RunCallback], list[str]]:
    """The callbacks of the chosen trackers, and a note for each one whose package is missing."""
    hooks: list[RunCallback] = []
    notes = []
    for name in chosen(report_to):
        if not installed(name):
            notes.append(f"report_to: {name} is not installed ({install_hint(name)}); its scalars are not written.")
        elif name == "tensorboard":
            hooks.append(TensorBoardCallback())
        elif name == "wandb":
            hooks.append(WandbCallback(tracking, settings))
        else:
            hooks.append(TrackioCallback(tracking, settings))
    return hooks, notes


class WandbCallback(RunCallback):
    """Round scalars to a Weights & Biases run under ``<run>/wandb/`` (one wandb run per spadegym run)."""

    def __init__(self, tracking: TrackingConfig, settings: dict[str, Any]) -> None:
        self.tracking, self.settings, self.run = tracking, settings, None

    def mode(self) -> str:
        if self.tracking.wandb_mode != "auto":
            return self.tracking.wandb_mode
        return os.environ.get("WANDB_MODE") or ("online" if os.environ.get("WANDB_API_KEY") else "offline")

    def on_start(self, start: RunStart) -> None:
        mode = self.mode()
        if mode == "offline":
            # wandb's error reporting connects out even offline; an offline run contacts nobody unless the user
            # turned it on. Read when wandb starts its service, so it is set before the import.
            os.environ.setdefault("WANDB_ERROR_REPORTING", "false")
        import wandb

        run_dir = start.run_dir.resolve()
        # The same id for the same run directory: a resumed run continues its wandb run.
        run_id = hashlib.sha256(str(run_dir).encode()).hexdigest()[:16]
        self.run = wandb.init(project=self.tracking.project, name=run_dir.name, id=run_id, resume="allow",
                              dir=str(run_dir), mode=mode, config=self.settings)

    def on_round(self, summary: RoundSummary) -> None:
        if self.run is not None:
            self.run.log(summary_scalars(summary.to_dict()), step=summary.round)

    def on_end(self) -> None:
        if self.run is not None:
            self.run.finish()
            self.run = None


class TrackioCallback(RunCallback):
    """Round scalars to a trackio run named after the run directory (local unless a Space is named)."""

    def __init__(self, tracking: TrackingConfig, settings: dict[str, Any]) -> None:
        self.tracking, self.settings, self.run = tracking, settings, None

    def on_start(self, start: RunStart) -> None:
        import trackio

        self.run = trackio.init(project=self.tracking.project, name=start.run_dir.resolve().name, resume="allow",
                                space_id=self.tracking.trackio_space, config=self.settings)

    def on_round(self, summary: RoundSummary) -> None:
        if self.run is not None:
            self.run.log(summary_scalars(summary.to_dict()), step=summary.round)

    def on_end(self) -> None:
        if self.run is not None:
            self.run.finish()
            self.run = None
