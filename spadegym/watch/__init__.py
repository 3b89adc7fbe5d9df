"""The reward-hacking watch: is a designer gaming its reward, and what should its levels earn?

Per level, evidence from every play (outcomes at fixed instance seeds, win rates
round by round, probe plays by scripted policies) supports findings
(``evidence.FINDINGS``); per designer, the rules (``rules``) flag a finding its
levels show again and again; the designer reward of a level with a finding is
priced out. ``benchmarks/reward_hacking.py`` measures it against the
adversarial designers of ``spadegym_testing.gaming``.
"""

from .evidence import FINDINGS, LevelEvidence, Outcome
from .watch import Watch, WatchConfig

__all__ = ["FINDINGS", "LevelEvidence", "Outcome", "Watch", "WatchConfig"]
