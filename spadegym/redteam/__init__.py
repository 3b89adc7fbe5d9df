"""Red-team mode: find a frozen agent's failures and ship them as a regression suite.

    result = redteam(RedTeamConfig(target="openai:m@http://127.0.0.1:8000/v1", budget=100), "suites/m")
    scores = evaluate_suite("suites/m", ["openai:m@http://127.0.0.1:8000/v1"])
"""

from .config import RedTeamConfig
from .evaluate import evaluate_suite, fixed, load_results, regressions
from .hunt import RedTeamResult, redteam
from .round import RedTeam
from .scorecard import write_junit, write_scorecard
from .suite import Case, Suite, SuiteError, load_suite

__all__ = [
    "Case", "RedTeam", "RedTeamConfig", "RedTeamResult", "Suite", "SuiteError", "evaluate_suite", "fixed", "load_results",
    "load_suite", "redteam", "regressions", "write_junit", "write_scorecard",
]
