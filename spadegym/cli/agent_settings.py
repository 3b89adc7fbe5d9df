"""``--set`` for the commands that build an agent outside a run (``play``, ``eval``): the agent's sections of
the run config, checked as a run checks them.

    spadegym play maze.py --agent hf:models/smollm2 --set train.max_seq_len=4096
"""

from __future__ import annotations

from typing import Any

from ..agents.registry import AGENTS
from ..errors import UserError
from ..specs import Spec

#: The run config's sections each agent kind reads (as its registry declares them).
AGENT_SECTIONS = {kind.name: kind.sections for kind in AGENTS.kinds.values()}

SET_HELP = ("An agent setting, section.field=value (repeatable): train.* for hf:, learner.* for learner, "
            "llm.* and openai_agent.* for openai: (see `spadegym run --print-config`).")


def settings_for(spec: Spec, sets: list[str] | None) -> list[str]:
    """The ``--set`` items the agent ``spec``'s kind reads (several agents, each of its own kind, share one list)."""
    sections = AGENTS.kind(spec).sections
    return [item for item in sets or [] if item.partition("=")[0].strip().partition(".")[0] in sections]


def check_settings_apply(specs: list[Spec], sets: list[str] | None) -> None:
    """Each ``--set`` item must be read by at least one of the agents."""
    for item in sets or []:
        if not any(item in settings_for(spec, [item]) for spec in specs):
            key = item.partition("=")[0].strip()
            raise UserError(f"--set {key}: none of the agents ({', '.join(map(str, specs))}) reads it; "
                            "train.* is for hf:, learner.* for learner, llm.* and openai_agent.* for openai:.")


def agent_options(spec: Spec, sets: list[str] | None) -> dict[str, Any]:
    """``make_agent``'s options for ``spec``: what its kind reads of a run config with the ``--set`` values applied.

    An option its kind takes whole from a section (``train``, the learner's ``config``) comes with that section;
    an option that is one field of a section (the LLM agent's ``temperature``) comes only when set, so the
    kind's own defaults hold for the rest."""
    if not sets:
        return {}
    from ..loop.config import load_config

    sections = AGENTS.kind(spec).sections
    given: dict[str, set[str]] = {}
    for item in sets:
        key = item.partition("=")[0].strip()
        section, dot, field = key.partition(".")
        if section not in sections or not dot:
            reads = f"reads {', '.join(s + '.*' for s in sections)}" if sections else "takes no settings"
            raise UserError(f"--set {key}: agent '{spec}' {reads}.")
        given.setdefault(section, set()).add(field.split(".")[0])
    config = load_config(None, {"agent": spec.text}, sets)  # every value checked, with the run's one-sentence errors
    whole = [getattr(config, section) for section in given]
    fields = {field for named in given.values() for field in named}
    return {option: value for option, value in AGENTS.from_config(spec, config).items()
            if option in fields or any(value is section for section in whole)}
