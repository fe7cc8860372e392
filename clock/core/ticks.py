"""The clock's cadence: when each tick happens, and which frame its read belongs to.

Ticks and frames
----------------
Tick ``k`` (k = 0, 1, 2, ...) happens at time ``k * period_s``. The analyser
data a read sees ends on a render-quantum boundary (128 frames), so the tick
is mapped to the frame

* ``F_k = ceil(k * period_s * rate / 128) * 128`` (``align="ceil"``, the rule
  ``OfflineAudioContext.suspend`` follows: the first boundary at or after the
  tick time), or
* ``F_k = floor(k * period_s * rate / 128) * 128`` (``align="floor"``: the last
  boundary a real-time context has finished rendering).

The arithmetic is exact (the period is a :class:`fractions.Fraction`), so
frame positions never drift: at 48 kHz with a period of 1/60 s, tick 4 lands
on frame 3200.

**A tick's time is its frame divided by the rate** (``F_k / rate``, one
float64 division), not ``k * period_s``: that is the time a page can measure
(the frame its analyser read belongs to, over ``sampleRate``), and the time
``speechclock.js`` decides at. At 48 kHz and 1/60 s, tick 1 is at 896 / 48000
s (0.018667 s), not 1/60 s; quiet times are differences of such times, so 150
ticks after a last word span 119,936 or 120,064 frames depending on the last
word's tick (up to 2.7 ms either side of 2.5 s). A trace holds every tick whose frame lies within the recording
(``F_k <= n_frames``), and every tick whose nominal time lies inside it
(``k * period_s < duration``, strictly) though its frame does not: the window
of such a tick runs past the last sample, and those frames read as zero, as
the analyser's next render quanta would be silent once the audio has ended.
A tick whose nominal time is exactly the duration is held only when its frame
is within the recording (2.0 s at 48 kHz: tick 120, frame 96000; at 44.1 kHz
tick 120's frame, 88320, lies past the 88200th, and the trace ends at tick
119).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .analyser import RENDER_QUANTUM_FRAMES

__all__ = ["DEFAULT_TICK_S", "Align", "Ticks", "frame_times_s", "parse_period"]

#: The page clock polls its analyser on a timer (speechclock.js: setInterval), 60 times a second by default.
DEFAULT_TICK_S = Fraction(1, 60)

Align = Literal["ceil", "floor"]

# A period as Fraction reads it (a ratio, or a decimal with an exponent), with
# the exponent kept small: Fraction("1e999999999") would compute 10**999999999.
_PERIOD_TEXT = re.compile(r"\s*[+-]?(?:\d+\s*/\s*\d+|(?:\d+\.?\d*|\.\d+)(?:[eE](?P<exp>[+-]?\d+))?)\s*")
_MAX_PERIOD_TEXT = 64
_MAX_EXPONENT = 400


def parse_period(text: str | float | Fraction) -> Fraction:
    """Parse a tick period in seconds exactly: ``"1/60"``, ``"0.05"``, ``1``.

    A decimal string is taken at its written value (``"0.1"`` is exactly
    1/10); a float is taken at its exact binary value. A string holds at
    most 64 characters and an exponent of at most 400.

    Raises
    ------
    InvalidParameterError
        Not a number, or not > 0.
    """
    bad = InvalidParameterError(f"tick period must be a number of seconds like 1/60 or 0.05, got {text!r:.40}")
    if isinstance(text, str):
        m = _PERIOD_TEXT.fullmatch(text) if len(text) <= _MAX_PERIOD_TEXT else None
        if m is None or (m["exp"] is not None and abs(int(m["exp"])) > _MAX_EXPONENT):
            raise bad
    try:
        value = Fraction(text) if not isinstance(text, str) else Fraction(text.strip().replace(" ", ""))
    except (ValueError, ZeroDivisionError, TypeError, OverflowError):
        raise bad from None
    if value <= 0:
        raise InvalidParameterError(f"tick period must be > 0 s, got {text!r:.40}")
    return value


@dataclass(frozen=True, slots=True)
class Ticks:
    """A polling cadence: tick ``k`` at ``k * period_s``, read at a quantum boundary.

    Parameters
    ----------
    period_s : Fraction
        Seconds between ticks (exact).
    align : {"ceil", "floor"}
        Which render-quantum boundary a tick reads (see the module notes).
    """

    period_s: Fraction = DEFAULT_TICK_S
    align: Align = "ceil"

    def __post_init__(self) -> None:
        if not isinstance(self.period_s, Fraction):
            object.__setattr__(self, "period_s", parse_period(self.period_s))
        elif self.period_s <= 0:
            raise InvalidParameterError(f"tick period must be > 0 s, got {self.period_s}")
        if self.align not in ("ceil", "floor"):
            raise InvalidParameterError(f"align must be 'ceil' or 'floor', got {self.align!r}")

    @classmethod
    def every_frames(cls, n_frames: int, sample_rate_hz: int, *, align: Align = "ceil") -> Ticks:
        """A cadence of one tick every ``n_frames`` frames at ``sample_rate_hz``."""
        if n_frames < 1:
            raise InvalidParameterError(f"tick frames must be >= 1, got {n_frames}")
        return cls(Fraction(n_frames, sample_rate_hz), align)

    def frames(self, k: NDArray[np.int64], sample_rate_hz: int) -> NDArray[np.int64]:
        """Frame positions ``F_k`` of ticks ``k`` (exact integer arithmetic)."""
        k = np.asarray(k, dtype=np.int64)
        num = self.period_s.numerator * sample_rate_hz
        den = self.period_s.denominator * RENDER_QUANTUM_FRAMES
        k_max = int(k.max()) if k.size else 0
        if max(k_max * num, num, den) >= 2**62:
            # Would overflow int64: exact Python integers instead.
            q = [(-(-int(i) * num // den) if self.align == "ceil" else int(i) * num // den) for i in k]
            return np.asarray(q, dtype=np.int64) * RENDER_QUANTUM_FRAMES
        # In place on one array: a trace of hours holds millions of ticks.
        out = k * num
        if self.align == "ceil":
            np.negative(out, out=out)
            np.floor_divide(out, den, out=out)
            np.negative(out, out=out)
        else:
            np.floor_divide(out, den, out=out)
        out *= RENDER_QUANTUM_FRAMES
        return out

    def time_s(self, k: NDArray[np.int64]) -> NDArray[np.float64]:
        """Nominal tick times ``k * period_s`` in seconds (rounded once to float64).

        Not the time a tick decides at: that is its frame over the rate
        (:attr:`clock.core.levels.LevelTrace.t_s`, :func:`frame_times_s`).
        """
        k = np.asarray(k, dtype=np.int64)
        return k * self.period_s.numerator / self.period_s.denominator


def frame_times_s(frames: NDArray[np.int64], sample_rate_hz: int) -> NDArray[np.float64]:
    """The time of each frame in seconds, ``frame / rate`` (one float64 division, as JavaScript's).

    The time of a tick everywhere: in the replay, in ``speechclock.js``
    (``frame / sampleRate``) and in every number the tool prints.
    """
    return np.asarray(frames, dtype=np.int64) / float(sample_rate_hz)
