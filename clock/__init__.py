"""speech-clock: measure the speech clock of a browser voice guide.

The data flow, and where each step lives:

1. decode: :mod:`clock.io.decode` reads a recording into mono float32 blocks
   (the only module that touches soundfile and PyAV);
2. levels: :mod:`clock.core.analyser` emulates the browser's ``AnalyserNode``
   and :mod:`clock.core.levels` gives the level at each tick of the clock;
3. segments: :mod:`clock.core.segments` finds speech and the gaps between;
4. beats and replay: :mod:`clock.core.beats` finds the onset after each
   terminal response and replays the browser clock;
5. derive and check: :mod:`clock.core.recommend`, :mod:`clock.core.sweep` and
   :mod:`clock.core.check` recommend and test the thresholds
   (:mod:`clock.api`: ``check`` and ``derive`` as the commands run them);
6. report: :mod:`clock.report` renders tables, plots and the HTML report.

``clock.core`` is pure numpy: it never imports soundfile, PyAV, click or
matplotlib. ``import clock`` loads none of them, nor numpy: every name
below is imported when first used, so the command line starts light.

Examples
--------
>>> import clock
>>> corpus = clock.load_corpus(["recordings"])                     # doctest: +SKIP
>>> d = clock.derive(corpus.observations)                          # doctest: +SKIP
>>> results = clock.check("recordings")                            # doctest: +SKIP
>>> clock.check_counts(results)                                    # doctest: +SKIP
>>> rec = corpus.recordings[0]                                     # doctest: +SKIP
>>> clock.beats(rec.trace, rec.events, floor=0.003, quiet_s=2.5)   # doctest: +SKIP
>>> clock.stress(corpus, axes=["gain", "noise"])                   # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _startup  # noqa: F401 - first: Ctrl-C while the command line starts is one line
from ._version import __version__
from .errors import (
    ConfigError,
    EventLogError,
    InvalidParameterError,
    InvalidSignalError,
    RecordingError,
    SpeechClockError,
    SpeechClockWarning,
)

if TYPE_CHECKING:  # what the names below are, for type checkers; imported on first use
    from .api import derive
    from .core.analyser import Analyser, AnalyserOptions, downmix_to_mono
    from .core.beats import (
        Beat,
        BeatAnalysis,
        Decision,
        FloorAnalysis,
        Replay,
        ReplayBeat,
        analyse,
        beats,
        decide,
        replay,
        replay_ticks,
    )
    from .core.check import CheckCase, CheckCounts, CheckResult, check_cases, check_counts, check_recording
    from .core.events import Event, EventLog, Label
    from .core.levels import (
        LevelTrace,
        SignalSummary,
        Ticks,
        iter_levels,
        levels,
        multi_levels,
        parse_period,
        summarize,
    )
    from .core.model import Margins, Observation
    from .core.recommend.evidence import CorpusOutcome, Derivation
    from .core.recommend.floor_math import equivalents
    from .core.recommend.windows import RecordingLevels, classify_ticks, recording_levels
    from .core.segments import QuantumSpeech, Segment, Segmentation, label_errors, segments
    from .core.stress import Failure, LineMargin, SettingStress, StressResult
    from .core.sweep import SweepPoint, SweepResult, grid, sweep
    from .core.thresholds import DEFAULT_THRESHOLDS, Thresholds

# name -> module, imported on first use: ``import clock`` (and the command line's start) loads none of
# them; the core's need numpy, the others soundfile, PyAV or matplotlib as well.
_LAZY = {
    "Analyser": "clock.core.analyser",
    "AnalyserOptions": "clock.core.analyser",
    "downmix_to_mono": "clock.core.analyser",
    "Beat": "clock.core.beats",
    "BeatAnalysis": "clock.core.beats",
    "Decision": "clock.core.beats",
    "FloorAnalysis": "clock.core.beats",
    "Replay": "clock.core.beats",
    "ReplayBeat": "clock.core.beats",
    "analyse": "clock.core.beats",
    "beats": "clock.core.beats",
    "decide": "clock.core.beats",
    "replay": "clock.core.beats",
    "replay_ticks": "clock.core.beats",
    "CheckCase": "clock.core.check",
    "CheckCounts": "clock.core.check",
    "CheckResult": "clock.core.check",
    "check_cases": "clock.core.check",
    "check_counts": "clock.core.check",
    "check_recording": "clock.core.check",
    "Derivation": "clock.core.recommend.evidence",
    "Margins": "clock.core.model",
    "Observation": "clock.core.model",
    "CorpusOutcome": "clock.core.recommend.evidence",
    "RecordingLevels": "clock.core.recommend.windows",
    "classify_ticks": "clock.core.recommend.windows",
    "derive": "clock.api",
    "equivalents": "clock.core.recommend.floor_math",
    "recording_levels": "clock.core.recommend.windows",
    "Event": "clock.core.events",
    "EventLog": "clock.core.events",
    "Label": "clock.core.events",
    "LevelTrace": "clock.core.levels",
    "SignalSummary": "clock.core.levels",
    "Ticks": "clock.core.levels",
    "iter_levels": "clock.core.levels",
    "levels": "clock.core.levels",
    "multi_levels": "clock.core.levels",
    "parse_period": "clock.core.levels",
    "summarize": "clock.core.levels",
    "QuantumSpeech": "clock.core.segments",
    "Segment": "clock.core.segments",
    "Segmentation": "clock.core.segments",
    "label_errors": "clock.core.segments",
    "segments": "clock.core.segments",
    "Failure": "clock.core.stress",
    "LineMargin": "clock.core.stress",
    "SettingStress": "clock.core.stress",
    "StressResult": "clock.core.stress",
    "SweepPoint": "clock.core.sweep",
    "SweepResult": "clock.core.sweep",
    "grid": "clock.core.sweep",
    "sweep": "clock.core.sweep",
    "DEFAULT_THRESHOLDS": "clock.core.thresholds",
    "Thresholds": "clock.core.thresholds",
    "probe": "clock.io.decode",
    "iter_blocks": "clock.io.decode",
    "AudioInfo": "clock.io.decode",
    "read_recording": "clock.io.recording",
    "Recording": "clock.io.recording",
    "envelope": "clock.io.recording",
    "read_events": "clock.io.events",
    "read_labels": "clock.io.events",
    "read_config": "clock.io.config",
    "Config": "clock.io.config",
    "load_corpus": "clock.io.corpus",
    "Corpus": "clock.io.corpus",
    "plot_recording": "clock.report.plot",
    "plot_sweep_heatmap": "clock.report.plot",
    "plot_tradeoff": "clock.report.plot",
    "derive_text": "clock.report.text",
    "derive_markdown": "clock.report.text",
    "sweep_table": "clock.report.text",
    "plot_evidence": "clock.report.plot",
    "plot_beat_timeline": "clock.report.plot",
    "to_frame": "clock.frames",
    "check": "clock.api",
    "stress": "clock.io.stress",
    "plot_stress": "clock.report.plot",
    "stress_text": "clock.report.stress",
}

__all__ = [
    "DEFAULT_THRESHOLDS",
    "Analyser",
    "AnalyserOptions",
    "Beat",
    "BeatAnalysis",
    "CheckCase",
    "CheckCounts",
    "CheckResult",
    "ConfigError",
    "Decision",
    "Derivation",
    "Event",
    "EventLog",
    "EventLogError",
    "Failure",
    "FloorAnalysis",
    "InvalidParameterError",
    "InvalidSignalError",
    "Label",
    "LevelTrace",
    "LineMargin",
    "Margins",
    "Observation",
    "CorpusOutcome",
    "QuantumSpeech",
    "RecordingError",
    "RecordingLevels",
    "Replay",
    "ReplayBeat",
    "Segment",
    "Segmentation",
    "SettingStress",
    "SignalSummary",
    "SpeechClockError",
    "SpeechClockWarning",
    "StressResult",
    "SweepPoint",
    "SweepResult",
    "Thresholds",
    "Ticks",
    "__version__",
    "analyse",
    "beats",
    "check_cases",
    "check_counts",
    "check_recording",
    "classify_ticks",
    "decide",
    "derive",
    "downmix_to_mono",
    "equivalents",
    "grid",
    "iter_levels",
    "label_errors",
    "levels",
    "multi_levels",
    "parse_period",
    "recording_levels",
    "replay",
    "replay_ticks",
    "segments",
    "summarize",
    "sweep",
    *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'clock' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
