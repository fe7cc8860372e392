"""The core's shared vocabulary: the tolerances every comparison of times allows, and the core's input types.

The tolerances (``EPS_S``, ``CLEAR_S``, ``MIN_GAP_S``) and what a recording
gives the recommendation engine (:class:`Observation`) with the margins it
keeps from the evidence (:class:`Margins`) live here, so that every module
reads one definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InvalidParameterError
from .agreement import Agreement
from .events import EventLog, Label
from .levels import LevelTrace
from .thresholds import check_bounded

#: Comparisons of elapsed time against a quiet time allow this for float rounding (times are sums of tick periods).
EPS_S = 1e-9
#: A quiet time stands clear of the longest gap plus the margin by this much (``check`` fails a gap that reaches
#: it).
CLEAR_S = 1e-6
#: A quiet shorter than this between two runs of speech is a dip between words, not a pause: ``--min-gap``'s
#: default, ``Margins.min_gap_s`` (gaps under it are left out of derive's gap evidence), and where an
#: acknowledgment ends (:func:`clock.core.segments.word_gaps`).
MIN_GAP_S = 0.15

#: The largest value of each margin (they are at least 0): a margin of 1e308 is no margin.
MARGIN_BOUNDS = {
    "quiet_margin_s": (60.0, " s"),
    "floor_margin_db": (60.0, " dB"),
    "onset_margin_s": (3600.0, " s"),
    "min_gap_s": (60.0, " s"),
    "speech_range_db": (120.0, " dB"),
    "min_saving_s": (60.0, " s"),
}


@dataclass(frozen=True, slots=True)
class Margins:
    """How far the recommendations stand from the evidence, and what counts as a gap.

    Attributes
    ----------
    quiet_margin_s : float
        Added to the longest gap for the quiet time; a narration gap fails
        the check when it reaches ``quiet_s - quiet_margin_s``.
    floor_margin_db : float
        The speech low percentile must be this far above the floor (the
        window's upper edge, and a check).
    onset_margin_s : float
        Added to the longest onset latency for the onset timeout.
    min_gap_s : float
        Shorter gaps are dips inside words, left out of the gap distribution
        (the maximum is still over every gap).
    speech_percentile : float
        The low percentile of speech levels the floor is set below.
    speech_range_db : float
        Speech ticks are within this many dB of their utterance's median.
    min_saving_s : float
        derive names a rule on the provider's event only where it saves at
        least this much median dead air against the level clock, at the
        recommended setting and at the committed one.
    """

    quiet_margin_s: float = 0.2
    floor_margin_db: float = 3.0
    onset_margin_s: float = 2.0
    min_gap_s: float = MIN_GAP_S
    speech_percentile: float = 5.0
    speech_range_db: float = 20.0
    min_saving_s: float = 0.3

    def __post_init__(self) -> None:
        for name, (high, unit) in MARGIN_BOUNDS.items():
            check_bounded(getattr(self, name), name, 0.0, high, unit)
        if not (0 < self.speech_percentile < 100):
            raise InvalidParameterError(f"speech_percentile must be in (0, 100), got {self.speech_percentile!r}")


@dataclass(frozen=True, slots=True)
class Observation:
    """One recording as the derivation sees it.

    Attributes
    ----------
    name : str
    trace : LevelTrace
    events : EventLog or None
    labels : sequence of Label or None
    meta : dict
        Metadata from the config (voice, model, ...), for grouping; the log's
        ``session`` line fills in what the config does not say.
    agreement : Agreement or None
        The page's logged levels against the recording's (when the log has
        ``clock.level`` readings).
    """

    name: str
    trace: LevelTrace
    events: EventLog | None = None
    labels: tuple[Label, ...] | None = None
    meta: dict[str, object] = field(default_factory=dict)
    agreement: Agreement | None = None

    @property
    def has_beats(self) -> bool:
        """Whether its event log holds a terminal response."""
        return self.events is not None and bool(self.events.terminals)
