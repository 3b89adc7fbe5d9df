"""Run untrusted environment code in confined worker processes."""

from .config import TIERS, SandboxConfig
from .doctor import doctor
from .handle import EnvHandle
from .hardening import TierReport, probe
from .host import Sandbox, SandboxError, sandbox_or_own
from .protocol import CATEGORIES, Outcome
from .transport import Worker, gather

__all__ = [
    "CATEGORIES", "TIERS", "EnvHandle", "Outcome", "Sandbox", "SandboxConfig", "SandboxError",
    "TierReport", "Worker", "doctor", "gather", "probe", "sandbox_or_own",
]
