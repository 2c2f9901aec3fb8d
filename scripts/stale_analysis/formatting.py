"""How the tables print a number: `digits` significant digits, and what a table says where there
is no finite value (each table keeps its own word: "n/a", "diverges", "–", "∞", …)."""
from __future__ import annotations

import math


def number(x, digits: int = 3, missing: str = "–", inf: str | None = None) -> str:
    """x with `digits` significant digits (%g); a string as it is; None or a non-finite value as
    `missing`, except +∞ as `inf` when given."""
    if isinstance(x, str):
        return x
    if x is None:
        return missing
    if not math.isfinite(x):
        return inf if inf is not None and x > 0 else missing
    return f"{x:.{digits}g}"
