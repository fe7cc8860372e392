"""Results as pandas DataFrames, for notebooks and analysis (``pip install '.[frames]'`` in a checkout of speech-clock).

pandas is imported only when a frame is asked for; the rest of the package
never needs it. Columns are named as the JSON fields of the same results
(docs/formats.md).

Examples
--------
>>> import clock
>>> corpus = clock.load_corpus(["recordings"])                  # doctest: +SKIP
>>> clock.to_frame(clock.derive(corpus.observations))           # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Any

import numpy as np

from .core.beats import Beat
from .core.check import CheckResult
from .core.levels import LevelTrace
from .core.recommend.evidence import Derivation
from .core.sweep import SweepResult
from .core.tally import record
from .errors import InvalidParameterError

__all__ = ["to_frame"]


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise InvalidParameterError(
            "pandas is not installed: pip install '.[frames]' in a checkout of speech-clock (or pandas) "
            "to get DataFrames"
        ) from None
    return pandas


#: Columns that are numbers even when every row has none (they come out as all-NaN floats).
_NUMBER_COLUMNS = ("measured", "threshold", "window_low", "window_high")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool | np.bool_)


def _frame(pd: Any, rows: list[dict[str, Any]]) -> Any:
    """A DataFrame whose optional numbers (None where absent) are float columns with NaN, not objects."""
    df = pd.DataFrame(rows)
    for c in df.columns:
        if df[c].dtype != object:
            continue
        present = [v for v in df[c] if v is not None]
        if (present and all(_is_number(v) for v in present)) or (
            not present and (str(c).endswith("_s") or c in _NUMBER_COLUMNS)
        ):
            df[c] = pd.to_numeric(df[c].astype(float))
    return df


def _beat_row(b: Beat) -> dict[str, Any]:
    row = {f.name: getattr(b, f.name) for f in fields(b) if f.name != "replay"}
    row.update(
        quiet_declared_s=b.quiet_declared_s,
        added_latency_s=b.added_latency_s,
        no_onset=b.no_onset,
        replay_vs_logged_s=b.replay_vs_logged_s,
        provider_stopped_vs_last_word_s=b.provider_stopped_vs_last_word_s,
        rule_stopped_vs_last_word_s=b.rule_stopped_vs_last_word_s,
        cut=b.cut,
        aborted=b.aborted,
        outpaced=b.outpaced,
        n_gaps=len(b.gaps_s),
        max_gap_s=max(b.quiet_gaps_s, default=None),
    )
    return row


def to_frame(result: Any) -> Any:
    """A result as a ``pandas.DataFrame``.

    Parameters
    ----------
    result : LevelTrace, SweepResult, Derivation, or a sequence of Beat or CheckResult
        * ``LevelTrace``: one row per tick (``tick``, ``t_s``, ``frame``, ``level``);
        * ``SweepResult``: one row per setting (the sweep's JSON ``points``);
        * ``Derivation``: one row per recording (its levels and window of floors,
          and whether it is inside the corpus window);
        * beats (from :func:`clock.beats`): one row per beat;
        * check results: one row per check of a recording.

    Returns
    -------
    pandas.DataFrame
        Optional numbers (an onset a beat does not have, a check without a
        measurement) are float columns with NaN where absent.

    Raises
    ------
    InvalidParameterError
        pandas is missing, or the result is of another kind.
    """
    pd = _pandas()
    if isinstance(result, LevelTrace):
        return pd.DataFrame(
            {
                "tick": result.tick,
                "t_s": result.t_s,
                "frame": np.asarray(result.frames),
                "level": np.asarray(result.level),
            }
        )
    if isinstance(result, SweepResult):
        return _frame(pd, [record(p) for p in result.points])
    if isinstance(result, Derivation):
        f = result.floor
        rows = []
        for r in f.recordings:
            row = {k: v for k, v in asdict(r).items() if not k.endswith("quantiles") and k != "window"}
            row["window_low"], row["window_high"] = r.window if r.window is not None else (None, None)
            row["status"] = "no window" if r.window is None else "outside" if r.name in f.outside else "inside"
            rows.append(row)
        return _frame(pd, rows)
    if isinstance(result, Sequence) and all(isinstance(x, Beat) for x in result) and result:
        return _frame(pd, [_beat_row(b) for b in result])
    if isinstance(result, Sequence) and all(isinstance(x, CheckResult) for x in result) and result:
        return _frame(pd, [asdict(r) | {"line": r.line()} for r in result])
    raise InvalidParameterError(f"no DataFrame for a {type(result).__name__}")
