"""The validation gate: is an environment file well-formed, feasible and not degenerate?

Sections, in order (each a list of small single-purpose checks):

- static: size, syntax, one ``...Env`` class, reset/step signatures, imports
  within the allow-list, no dynamic code (a lint with clear messages; the
  sandbox is the security boundary);
- runtime (in the sandbox): loads, resets, observation and valid actions,
  steps, reward range (a warning by default: the host clamps), determinism
  across fresh workers, replay after reset, robustness to malformed actions;
- feasibility (files with ``solution()``): the solution wins within the turn budget;
- degeneracy: not won by a meaningless action, a random policy loses, the
  reward varies, the answer leaks neither into the first observation nor the hint.

A verdict's ``category`` is that of its first failed check: ``static``,
``contract``, ``nondeterministic``, ``infeasible``, ``degenerate``, ``leak``, or
a sandbox failure category (``timeout``, ``memory``, ``crash``, ``protocol``,
``forbidden``, ``exception``, ``invalid_return``).
"""

from .config import DEFAULT_ALLOWED_IMPORTS, ValidationConfig
from .gate import expand_paths, validate_paths, validate_source, validate_sources
from .verdict import Check, Verdict

__all__ = ["DEFAULT_ALLOWED_IMPORTS", "Check", "ValidationConfig", "Verdict", "expand_paths",
           "validate_paths", "validate_source", "validate_sources"]
