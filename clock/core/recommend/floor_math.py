"""The arithmetic of floors: dB, floors of two significant digits inside a window, ladders, and other units.

Pure Python. Where in a window a floor goes (:func:`target_floor`), the
round floors near it (:func:`nice_floors`), floors about 1 dB apart
(:func:`floor_ladder`), and how floors are said (:func:`round_sig`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal


def db(x: float) -> float:
    """20 log10(x); -inf for 0, inf for inf."""
    if x == float("inf"):
        return x
    return 20 * math.log10(x) if x > 0 else float("-inf")


_MAX_CANDIDATES = 48


def nice_floors(lo: float, hi: float, target: float) -> list[float]:
    """Floors of two significant digits strictly inside (lo, hi), nearest ``target`` (in dB) first.

    Three digits when the window is too narrow for two; below 1/1000 of
    ``hi`` nothing is offered.
    """
    bottom = max(lo, hi * 1e-3)
    found: list[Decimal] = []
    for digits in (2, 3):
        for exp in range(math.floor(math.log10(bottom)), math.floor(math.log10(hi)) + 1):
            for m in range(10 ** (digits - 1), 10**digits):
                v = Decimal(m).scaleb(exp - digits + 1)
                if lo < float(v) < hi:
                    found.append(v)
        if found:
            break
    ranked = sorted(set(found), key=lambda v: (abs(math.log(float(v) / target)), v))
    return [float(v) for v in ranked[:_MAX_CANDIDATES]]


def floor_ladder(lo: float, hi: float, *, exclude: Sequence[float] = ()) -> list[float]:
    """Floors of two significant digits from just above ``lo`` up to below ``hi``, about 1 dB apart."""
    out: list[float] = []
    k = 1
    while True:
        v = float(f"{lo * 10 ** (k / 20):.2g}")
        k += 1
        if v >= hi or k > 200:
            return out
        if v > lo and v not in out and v not in exclude:
            out.append(v)


def target_floor(lo: float, hi: float, speech_low: float) -> tuple[float, str]:
    """Where in a window (lo, hi) a floor goes: 6 dB below the speech low, or the middle if that is nearer the noise."""
    target_db = min(db(hi), db(speech_low) - 20 * math.log10(2))
    if lo > 0 and target_db - db(lo) < db(hi) - target_db:
        return 10 ** ((db(lo) + db(hi)) / 40), "the middle of the window in dB (6 dB below speech is nearer the noise)"
    return 10 ** (target_db / 20), "6 dB below the lowest speech p{p}"


def sig_digits(x: float) -> int:
    """How many significant digits ``x`` is written with (``0.0024``: 2)."""
    return len(f"{x:g}".split("e")[0].replace("-", "").replace(".", "").lstrip("0"))


def round_sig(x: float, *, up: bool, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, rounded up or down, as written (a floor said to fail, or to end
    every beat right, rounded away from the edge it stands beside so the words stay true)."""
    d = Decimal(repr(x))
    exp = d.adjusted() - digits + 1
    return f"{float(d.scaleb(-exp).to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR).scaleb(exp)):g}"


def equivalents(floor: float) -> dict[str, float]:
    """A floor in other systems' units.

    Returns
    -------
    dict
        ``dbfs``: 20 log10(floor); ``auditok_energy_threshold``: auditok's
        log energy, 20 log10 of the RMS of int16 samples; ``hark_threshold_db``:
        hark's level (max of getFloatFrequencyData) for a pure tone at this
        RMS: its peak bin reads 20 log10(0.42/2 * sqrt(2) * floor).
    """
    return {
        "dbfs": 20 * math.log10(floor),
        "auditok_energy_threshold": 20 * math.log10(floor * 32768),
        "hark_threshold_db": 20 * math.log10(0.21 * math.sqrt(2) * floor),
    }
