"""Report tests build their runs with the store tests' synthetic-run writer (public store API only)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))
