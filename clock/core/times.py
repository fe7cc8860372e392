"""Times as people write them: seconds (``130.5``) or ``[h:]mm:ss.mmm`` (``02:10.500``).

Every line that points into a recording prints ``mm:ss.mmm``
(:func:`clock_time`); every option that takes a time reads it back
(:func:`parse_time`), so a time can be copied from one into the other. A
recommended time is rounded up to a step a person would write
(:func:`round_up`).
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, Decimal

from ..errors import InvalidParameterError

__all__ = ["clock_time", "parse_time", "round_up"]

_CLOCK = re.compile(r"^(?:(\d+):)?(\d+):(\d+(?:\.\d*)?)$")


def clock_time(t_s: float | None) -> str:
    """``mm:ss.mmm`` (``--:--.---`` when there is no time); minutes go past 59 (``75:00.000``)."""
    if t_s is None:
        return "--:--.---"
    ms = int(round(max(t_s, 0.0) * 1000))
    return f"{ms // 60000:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def parse_time(text: str | float, name: str = "a time") -> float:
    """Seconds from ``130.5``, ``2:10.5``, ``02:10.500`` or ``1:02:10`` (h:mm:ss).

    Parameters
    ----------
    text : str or float
        Seconds (any finite number), or ``[h:]m:ss[.fff]`` with seconds (and,
        after hours, minutes) below 60. Minutes alone may exceed 59, as
        :func:`clock_time` writes them.
    name : str
        What the time is, for the error.

    Raises
    ------
    InvalidParameterError
        Anything else, naming ``name`` and the text.
    """
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        s = text.strip()
        m = _CLOCK.match(s)
        if m is not None:
            hours, minutes, seconds = int(m.group(1) or 0), int(m.group(2)), float(m.group(3))
            if seconds >= 60 or (m.group(1) is not None and minutes >= 60):
                raise InvalidParameterError(
                    f"{name} must be seconds or [h:]mm:ss.mmm with minutes and seconds below 60, got {text!r}"
                )
            value = hours * 3600 + minutes * 60 + seconds
        else:
            try:
                value = float(s)
            except ValueError:
                raise InvalidParameterError(
                    f"{name} must be seconds (2.5) or mm:ss.mmm (02:10.500), got {text!r}"
                ) from None
    if not math.isfinite(value):
        raise InvalidParameterError(f"{name} must be a finite number of seconds, got {text!r}")
    return value


def round_up(x: float, step: str) -> float:
    """``x`` rounded up to a multiple of ``step``, in decimal arithmetic (2.30000001 -> 2.35 for 0.05).

    Parameters
    ----------
    x : float
    step : str
        The step as written (``"0.05"``), so that it is exact in decimal.

    Examples
    --------
    >>> round_up(2.3 + 0.2, "0.05")
    2.5
    >>> round_up(2.30000001, "0.05")
    2.35
    """
    q = Decimal(step)
    # Nine decimals absorb float noise: 2.3 + 0.2 is 2.4999999999999996.
    d = Decimal(repr(x)).quantize(Decimal("1e-9"))
    return float((d / q).to_integral_value(rounding=ROUND_CEILING) * q)
