"""The spec forms the command line's help shows: read from the one list of them (``spadegym.specs.FORMS``), which
the registries build their kinds from, so that `spadegym --help` imports no registry and the two never disagree."""

from ..specs import spec_help

AGENT_SPECS = spec_help("agent")
DESIGNER_SPECS = spec_help("designer")
DESIGNER_REWARDS = spec_help("designer_reward")
