"""Output helpers of the command line: numbers, tables, JSON, plurals, plain messages."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any


def fmt(x: float | None, digits: int = 5) -> str:
    """A number for a table: ``digits`` significant digits, ``-`` for None.

    Examples
    --------
    >>> import numpy as np
    >>> fmt(np.float64(0.5)), fmt(float("inf")), fmt(None), fmt(1234567.0)
    ('0.5', 'inf', '-', '1.2346e+06')
    """
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:.{digits}g}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 entry"``, ``"2 entries"``: a count with its noun in the right number.

    Examples
    --------
    >>> plural(1, "entry", "entries"), plural(3, "entry", "entries"), plural(0, "step")
    ('1 entry', '3 entries', '0 steps')
    """
    return f"{n} {word if n == 1 else (many or word + 's')}"


_NUMPY_SCALAR = re.compile(r"\bnp\.(?:float|int|uint|bool_?|complex)\w*\(([^()]*)\)")


def plain_numbers(text: str) -> str:
    """``np.float64(0.5)`` -> ``0.5`` in a message meant for people.

    Examples
    --------
    >>> plain_numbers("alpha must be > 1, got np.float64(1.0) and np.int64(3)")
    'alpha must be > 1, got 1.0 and 3'
    """
    return _NUMPY_SCALAR.sub(r"\1", text)


def table(header: list[str], rows: list[list[str]], left: Sequence[int] = (0,)) -> str:
    """Plain-text table; columns in ``left`` are left-aligned, the others right-aligned.

    Examples
    --------
    >>> print(table(["name", "x"], [["a", "1"], ["bb", "10"]]))
    name   x
    ----  --
    a      1
    bb    10
    """
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            str(c).ljust(w) if i in left else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON (numpy scalars and arrays as plain numbers and lists)."""
    print(json.dumps(data, indent=2, allow_nan=True, default=_json_default))


def _json_default(obj: Any) -> Any:
    import numpy as np  # here, not at import: ``dpacct --help`` needs no numpy

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def json_float(x: float) -> float | str:
    """A float for JSON: infinities as the strings ``"inf"`` / ``"-inf"``."""
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")
