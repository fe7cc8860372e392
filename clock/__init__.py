"""speech-clock: measure the speech clock of a browser voice guide.

The data flow, module by module:

1. :mod:`clock.io.decode` reads a recording into mono float32 blocks (the only
   module that touches soundfile and PyAV);
2. :mod:`clock.core.analyser` emulates the browser's ``AnalyserNode``, and
   :mod:`clock.core.levels` turns blocks into the level a page reads at each tick;
3. later stages (segments, beats and replay, derive and check, reports) build
   on the level trace.

The pure core (``clock.core``) never imports soundfile, PyAV, click
or matplotlib.
"""

from .core.analyser import Analyser, AnalyserOptions, downmix_to_mono
from .errors import (
    ConfigError,
    EventLogError,
    InvalidParameterError,
    InvalidSignalError,
    RecordingError,
    SpeechClockError,
    SpeechClockWarning,
)
from .core.levels import LevelTrace, SignalSummary, Ticks, iter_levels, levels, parse_period, summarize

__version__ = "0.1.0"

__all__ = [
    "Analyser",
    "AnalyserOptions",
    "ConfigError",
    "EventLogError",
    "InvalidParameterError",
    "InvalidSignalError",
    "LevelTrace",
    "RecordingError",
    "SignalSummary",
    "SpeechClockError",
    "SpeechClockWarning",
    "Ticks",
    "__version__",
    "downmix_to_mono",
    "iter_levels",
    "levels",
    "parse_period",
    "summarize",
]
