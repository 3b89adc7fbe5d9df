"""The executor tests play remote levels on the OpenEnv tests' real server (``tests/adapters/test_openenv.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters"))
