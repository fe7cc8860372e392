"""The clock's thresholds: the committed defaults, as one frozen value, and their bounds.

Every setting is bounded, so that no option or config value can make a run
explode (a tick of 1e-9 s would ask for a billion ticks a second):

============================  ==========================================
``floor``                     a level in [0, 1]
``quiet_s``                   in (0, 3600] s
``onset_timeout_s``           in (0, 3600] s
``tick_s``                    in [1 ms, 60 s]
``max_dead_air_s``            in (0, 3600] s (``check``'s, not the clock's)
``rule``, ``hangover_s``      one of :data:`RULES`; a hangover > 0 and
                              under ``quiet_s`` for the rules that take
                              one (:func:`check_rule`)
============================  ==========================================

The same checks serve the command line, the config and the library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

from ..errors import InvalidParameterError
from .ticks import DEFAULT_TICK_S

__all__ = [
    "DEFAULT_ONSET_TIMEOUT_S",
    "HANGOVER_RULES",
    "LEVEL",
    "LEVEL_AFTER_STOPPED",
    "RULES",
    "STOPPED",
    "STOPPED_QUIET",
    "check_rule",
    "DEFAULT_THRESHOLDS",
    "MAX_TICK_S",
    "MAX_WAIT_S",
    "MIN_TICK_S",
    "Thresholds",
    "check_bounded",
    "check_floor",
    "check_tick_s",
    "check_wait_s",
]

#: The onset timeout every entry point defaults to (the committed default, as on the command line).
DEFAULT_ONSET_TIMEOUT_S = 10.0

#: The shortest and longest clock tick.
MIN_TICK_S = Fraction(1, 1000)
MAX_TICK_S = Fraction(60)

#: The longest quiet time or onset timeout (an hour).
MAX_WAIT_S = 3600.0


LEVEL, STOPPED_QUIET, STOPPED, LEVEL_AFTER_STOPPED = "level", "stopped+quiet", "stopped", "level+stopped"
#: The rules that end a beat (see :mod:`clock.core.replay`), in the order every view lists them.
RULES = (LEVEL, STOPPED_QUIET, STOPPED, LEVEL_AFTER_STOPPED)
#: The rules with a hangover (the quiet after the last word that ends the beat once the provider's event came).
HANGOVER_RULES = (STOPPED_QUIET, LEVEL_AFTER_STOPPED)


def check_rule(rule: str, hangover_s: float | None, *, quiet_s: float | None = None) -> None:
    """Raise :class:`InvalidParameterError` unless ``rule`` is one of :data:`RULES` with the hangover it takes.

    A rule of :data:`HANGOVER_RULES` needs ``hangover_s``, a finite number > 0; the others take none. Given
    ``quiet_s``, the hangover must be under it: the level clock bounds every rule, so a hangover at or above
    the quiet time would never end a beat sooner (a page, the config and the command line refuse it).
    """
    if rule not in RULES:
        raise InvalidParameterError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    if rule in HANGOVER_RULES:
        if hangover_s is None or not (math.isfinite(hangover_s) and hangover_s > 0):
            raise InvalidParameterError(f"rule {rule} needs hangover_s, a finite number > 0, got {hangover_s!r}")
        if quiet_s is not None and hangover_s >= quiet_s:
            raise InvalidParameterError(
                f"rule {rule}: hangover_s must be under quiet_s ({quiet_s:g} s), got {hangover_s:g} s "
                "(the level clock bounds every rule: a hangover at or above the quiet time never ends a beat sooner)"
            )
    elif hangover_s is not None:
        raise InvalidParameterError(f"rule {rule} takes no hangover_s, got {hangover_s!r}")


def check_floor(value: float, name: str = "floor") -> float:
    """A floor: a finite level in [0, 1] (RMS on a full scale of 1.0)."""
    if not 0 <= value <= 1:
        raise InvalidParameterError(f"{name} must be a level in [0, 1], got {value!r}")
    return float(value)


def check_wait_s(value: float, name: str) -> float:
    """A quiet time or an onset timeout: in (0, :data:`MAX_WAIT_S`] seconds."""
    if not 0 < value <= MAX_WAIT_S:
        raise InvalidParameterError(f"{name} must be a positive number of seconds up to {MAX_WAIT_S:g}, got {value!r}")
    return float(value)


def check_tick_s(value: Fraction, name: str = "tick period") -> Fraction:
    """A clock tick: between :data:`MIN_TICK_S` (1 ms) and :data:`MAX_TICK_S` (60 s)."""
    if not MIN_TICK_S <= value <= MAX_TICK_S:
        try:
            shown = f"{float(value):.6g} s"
        except OverflowError:
            shown = "more than 1e308 s"
        raise InvalidParameterError(f"{name} must be between 0.001 and 60 s, got {shown}")
    return value


def check_bounded(value: float, name: str, low: float, high: float, unit: str = "") -> float:
    """A finite number in [low, high] (a margin or a tolerance)."""
    if not low <= value <= high:
        raise InvalidParameterError(f"{name} must be a number in [{low:g}, {high:g}]{unit}, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Thresholds:
    """What the browser clock runs with.

    Attributes
    ----------
    floor : float
        Speech is ``level > floor`` (RMS of the analyser's time-domain data).
    quiet_s : float
        Quiet time after the last word that ends a beat.
    onset_timeout_s : float
        How long the clock waits for speech after a terminal response.
    tick_s : Fraction
        The clock's polling period.
    fft_size : int
        The analyser's ``fftSize``.
    max_dead_air_s : float or None
        Not the clock's: what ``check`` holds the dead air to (the unpaused
        wait from a beat's last word to the clock's declaration, in every
        beat ended right, at the rule the page runs); None: not checked.
    rule : str
        The rule the page's clock runs (:data:`RULES`; the level clock by default).
    hangover_s : float or None
        Its hangover, under ``quiet_s`` (:func:`check_rule`).
    """

    floor: float = 0.003
    quiet_s: float = 2.5
    onset_timeout_s: float = DEFAULT_ONSET_TIMEOUT_S
    tick_s: Fraction = DEFAULT_TICK_S
    fft_size: int = 2048
    max_dead_air_s: float | None = None
    rule: str = LEVEL
    hangover_s: float | None = None

    def __post_init__(self) -> None:
        check_floor(self.floor)
        for name in ("quiet_s", "onset_timeout_s"):
            check_wait_s(getattr(self, name), name)
        if self.max_dead_air_s is not None:
            check_wait_s(self.max_dead_air_s, "max_dead_air_s")
        check_tick_s(self.tick_s, "tick_s")
        check_rule(self.rule, self.hangover_s, quiet_s=self.quiet_s)

    def with_(self, **changes: object) -> Thresholds:
        """A copy with the given fields changed (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]


#: The numbers read off the first recordings by hand, until a config says otherwise.
DEFAULT_THRESHOLDS = Thresholds()
