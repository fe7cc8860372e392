"""Times as people write them: seconds (``130.5``) or ``[h:]mm:ss.mmm`` (``02:10.500``).

Every line that points into a recording prints ``mm:ss.mmm``
(:func:`clock_time`); every option that takes a time reads it back
(:func:`parse_time`), so a time can be copied from one into the other.
"""

from __future__ import annotations

import math
import re

from ..errors import InvalidParameterError

__all__ = ["clock_time", "parse_time"]

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
