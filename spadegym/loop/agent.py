"""The one way an agent is built from its spec: by a run, a red-team search, ``spadegym eval`` and ``spadegym play``.

    agent = build_agent(config.agent, seed=config.seed, config=config)        # a run's (or a search's) agent
    agent = build_agent(AGENTS.parse("openai:m"), seed=0, temperature=0.2)    # options set by the caller

The spec is parsed once (``AGENTS.parse``; a ``Spec`` passes through), a run directory named by ``learner:RUN``
becomes its last checkpoint, and the kind's registry entry says what it reads of ``config``.
"""

from __future__ import annotations

from typing import Any

from ..agents.base import Agent
from ..agents.registry import AGENTS
from ..specs import Spec
from ..store.learner_run import run_learner


def build_agent(spec: str | Spec, *, seed: int, config: Any = None, offered: dict[str, Any] | None = None,
                **options: Any) -> Agent:
    """The agent ``spec`` names.

    ``config``: a run's or a search's configuration, of which the kind gets the sections it reads
    (``Kind.from_config``); ``offered``: parts any kind that declares them takes (a run's shared policies),
    None values left out; ``options``: the caller's, over both (each checked against the kind's model).
    """
    parsed = run_learner(AGENTS.parse(spec))
    kind = AGENTS.kind(parsed)
    given = dict(kind.from_config(config)) if config is not None else {}
    given.update({k: v for k, v in (offered or {}).items() if v is not None and kind.takes(k)})
    given.update(options)
    return AGENTS.make(parsed, seed, **given)
