"""Results as JSON-ready dicts, CSV rows and Audacity label tracks (schema 1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ..core.agreement import Agreement
from ..core.beats import Beat
from ..core.segments import LabelMatch, Segmentation
from ..core.thresholds import Thresholds

__all__ = [
    "SCHEMA",
    "agreement_dict",
    "beats_dict",
    "params_dict",
    "segments_audacity",
    "segments_dict",
    "segments_rows",
]

SCHEMA = 1


def params_dict(thresholds: Thresholds) -> dict[str, Any]:
    """The parameters every result carries (``tick_s`` as an exact fraction, ``"1/60"``, as everywhere)."""
    return {
        "floor": thresholds.floor,
        "quiet_s": thresholds.quiet_s,
        "onset_timeout_s": thresholds.onset_timeout_s,
        "tick_s": str(thresholds.tick_s),
        "fft_size": thresholds.fft_size,
    }


def segments_dict(
    recording: str, thresholds: Thresholds, seg: Segmentation, labels: Sequence[LabelMatch] | None = None
) -> dict[str, Any]:
    """``segments --format json``."""
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "recording": recording,
        "params": params_dict(thresholds) | {"min_gap_s": seg.min_gap_s, "min_speech_s": seg.min_speech_s},
        "segments": [
            {
                "onset_s": s.onset_s,
                "last_word_s": s.last_word_s,
                "onset_quantum_s": s.onset_quantum_s,
                "offset_quantum_s": s.offset_quantum_s,
                "duration_s": s.duration_s,
            }
            for s in seg.segments
        ],
        "gaps_s": list(seg.gaps_s),
    }
    return _with_labels(out, labels)


def _with_labels(out: dict[str, Any], labels: Sequence[LabelMatch] | None) -> dict[str, Any]:
    """``out``, and with ground truth the labels and their errors last, under ``labels`` (``segments``, ``beats``)."""
    if labels is not None:
        out["labels"] = [_label_dict(m) for m in labels]
    return out


def _label_dict(m: LabelMatch) -> dict[str, Any]:
    return {
        "start_s": m.label_start_s,
        "end_s": m.label_end_s,
        "label": m.text,
        "onset_error_s": m.onset_error_s,
        "offset_error_s": m.offset_error_s,
    }


def segments_rows(seg: Segmentation) -> list[list[Any]]:
    """CSV rows (header first) of the segments."""
    rows: list[list[Any]] = [
        ["onset_s", "last_word_s", "onset_quantum_s", "offset_quantum_s", "duration_s", "gap_after_s"]
    ]
    gaps = list(seg.gaps_s) + [None]
    for s, gap in zip(seg.segments, gaps):
        rows.append([s.onset_s, s.last_word_s, s.onset_quantum_s, s.offset_quantum_s, s.duration_s, gap])
    return rows


def segments_audacity(seg: Segmentation) -> str:
    """An Audacity label track: ``start<TAB>end<TAB>label`` per segment.

    Uses the render-quantum boundaries when known, else the tick times.
    """
    lines = []
    for i, s in enumerate(seg.segments, start=1):
        start = s.onset_quantum_s if s.onset_quantum_s is not None else s.onset_s
        end = s.offset_quantum_s if s.offset_quantum_s is not None else s.last_word_s
        lines.append(f"{start:.6f}\t{end:.6f}\tspeech {i}\n")
    return "".join(lines)


def agreement_dict(found: Agreement | None) -> dict[str, Any] | None:
    """The page-logged levels' agreement (None when the log has no ``clock.level`` readings)."""
    return None if found is None else asdict(found) | {"exact": found.exact}


def beats_dict(
    recording: str,
    thresholds: Thresholds,
    beats: Sequence[Beat],
    labels: Sequence[LabelMatch] | None = None,
    agreement: Agreement | None = None,
) -> dict[str, Any]:
    """``beats --format json``: one :func:`beat_dict` per beat under ``beats``."""
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "recording": recording,
        "params": params_dict(thresholds),
        "beats": [beat_dict(b) for b in beats],
        "agreement": agreement_dict(agreement),
    }
    return _with_labels(out, labels)


def beat_dict(b: Beat) -> dict[str, Any]:
    """One beat of ``beats --format json``."""
    return {
        "index": b.index,
        "terminal_s": b.terminal_s,
        "onset_s": b.onset_s,
        "onset_latency_s": b.onset_latency_s,
        "ack_overlap": b.ack_overlap,
        "ack_last_word_s": b.ack_last_word_s,
        "last_word_s": b.last_word_s,
        "quiet_declared_s": b.quiet_declared_s,
        "added_latency_s": b.added_latency_s,
        "gaps_s": list(b.gaps_s),
        "span_end_s": b.span_end_s,
        "bound": b.bound,
        "cause": b.cause,
        "past_bound": b.past_bound,
        "after_early_end": b.after_early_end,
        "outcome": b.outcome,
        "premature": b.premature,
        "stalled": b.stalled,
        "aborted": b.aborted,
        "outpaced": b.outpaced,
        "speech_at_end": b.speech_at_end,
        "narration_pause_s": b.narration_pause_s,
        "missed_onset": b.missed_onset,
        "premature_risk": b.premature_risk,
        "no_onset": b.no_onset,
        "logged_quiet_s": b.logged_quiet_s,
        "replay_vs_logged_s": b.replay_vs_logged_s,
        "response_id": b.response_id,
        "provider_stopped_s": b.provider_stopped_s,
        "provider_stopped_vs_last_word_s": b.provider_stopped_vs_last_word_s,
        "rule_stopped_s": b.rule_stopped_s,
        "rule_stopped_line": b.rule_stopped_line,
        "rule_stopped_assumed": b.rule_stopped_assumed,
        "rule_stopped_risk": b.rule_stopped_risk,
        "rule_stopped_vs_last_word_s": b.rule_stopped_vs_last_word_s,
        "barge_in_s": b.barge_in_s,
        "cleared_s": b.cleared_s,
        "cut": b.cut,
    }
