"""speech-clock: measure the speech clock of a browser voice guide.

The data flow, and where each step lives:

1. decode: :mod:`clock.io.decode` reads a recording into mono float32 blocks
   (the only module that touches soundfile and PyAV);
2. levels: :mod:`clock.core.analyser` emulates the browser's ``AnalyserNode``
   and :mod:`clock.core.levels` gives the level at each tick of the clock;
3. segments: :mod:`clock.core.segments` finds speech and the gaps between;
4. beats and replay: :mod:`clock.core.analysis` finds the onset after each
   terminal response, :mod:`clock.core.replay` replays the browser clock,
   and :mod:`clock.core.beats` lists each beat with both;
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
from typing import Any

from . import (
    _startup,  # noqa: F401 - first: Ctrl-C while the command line starts is one line
    errors,
)
from ._version import __version__

# The public names, each under the module that defines it, imported on first use: ``import clock`` (and the
# command line's start) loads none of them; the core's need numpy, the others soundfile, PyAV or matplotlib.
_PUBLIC = {
    "clock.errors": tuple(errors.__all__),  # every error and warning type
    "clock.core.analyser": ("Analyser", "AnalyserOptions", "downmix_to_mono"),
    "clock.core.levels": ("LevelTrace", "SignalSummary", "iter_levels", "levels", "multi_levels", "summarize"),
    "clock.core.ticks": ("Ticks", "parse_period"),
    "clock.core.events": ("Event", "EventLog", "Label"),
    "clock.core.segments": ("QuantumSpeech", "Segment", "Segmentation", "label_errors", "segments"),
    "clock.core.beats": ("Beat", "beats"),
    "clock.core.beat_analysis": ("BeatAnalysis",),
    "clock.core.decide": ("Decision", "decide"),
    "clock.core.analysis": ("FloorAnalysis", "analyse"),
    "clock.core.replay": ("Replay", "ReplayBeat", "replay", "replay_ticks"),
    "clock.core.recommend.evidence": ("Derivation", "CorpusOutcome"),
    "clock.core.model": ("Margins", "Observation"),
    "clock.core.recommend.windows": ("RecordingLevels", "classify_ticks", "recording_levels"),
    "clock.core.recommend.floor_math": ("equivalents",),
    "clock.core.check": ("CheckCase", "CheckCounts", "CheckResult", "check_cases", "check_counts", "check_recording"),
    "clock.core.sweep": ("SweepPoint", "SweepResult", "grid", "sweep"),
    "clock.core.stress": ("Failure", "LineMargin", "SettingStress", "StressResult"),
    "clock.core.thresholds": ("Thresholds", "DEFAULT_THRESHOLDS"),
    "clock.api": ("check", "derive"),
    "clock.io.decode": ("AudioInfo", "iter_blocks", "probe"),
    "clock.io.recording": ("Recording", "envelope", "read_recording"),
    "clock.io.events": ("read_events", "read_labels"),
    "clock.io.config": ("Config", "read_config"),
    "clock.run.corpus": ("Corpus", "load_corpus"),
    "clock.run.stress": ("stress",),
    "clock.report.plot": (
        "plot_beat_timeline",
        "plot_evidence",
        "plot_recording",
        "plot_stress",
        "plot_sweep_heatmap",
        "plot_tradeoff",
    ),
    "clock.report.text": ("derive_markdown", "derive_text", "sweep_table"),
    "clock.report.stress": ("stress_text",),
    "clock.frames": ("to_frame",),
}

_LAZY = {name: module for module, names in _PUBLIC.items() for name in names}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'clock' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
