"""Reading a figure: one rule for "a finite number, or None" wherever figures are stored, shown or logged."""

from __future__ import annotations

import math
from typing import Any


def finite_or_none(value: Any) -> float | None:
    """``value`` as a float when it is a finite number (text that reads as one included); else None.

    Booleans are not figures; NaN and infinities are missing values, never numbers a reader must guess at.
    """
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
