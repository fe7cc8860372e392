"""The clock's thresholds: the committed defaults, as one frozen value."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from ..errors import InvalidParameterError
from .beats import DEFAULT_ONSET_TIMEOUT_S
from .levels import DEFAULT_TICK_S

__all__ = ["DEFAULT_THRESHOLDS", "Thresholds"]


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
    """

    floor: float = 0.003
    quiet_s: float = 2.5
    onset_timeout_s: float = DEFAULT_ONSET_TIMEOUT_S
    tick_s: Fraction = DEFAULT_TICK_S
    fft_size: int = 2048

    def __post_init__(self) -> None:
        if not (self.floor >= 0 and self.floor < float("inf")):
            raise InvalidParameterError(f"floor must be a finite level >= 0, got {self.floor!r}")
        for name in ("quiet_s", "onset_timeout_s"):
            value = getattr(self, name)
            if not (value > 0 and value < float("inf")):
                raise InvalidParameterError(f"{name} must be a positive number of seconds, got {value!r}")

    def with_(self, **changes: object) -> Thresholds:
        """A copy with the given fields changed (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]


#: The numbers read off the first recordings by hand, until a config says otherwise.
DEFAULT_THRESHOLDS = Thresholds()
