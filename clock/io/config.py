"""``speechclock.toml``: the committed thresholds, margins and per-recording metadata.

Example::

    [thresholds]
    floor = 0.003            # speech is level > floor (RMS)
    quiet_s = 2.5            # quiet time that ends a beat
    onset_timeout_s = 10.0   # how long the clock waits for speech
    tick_s = "1/60"          # the clock's polling period (exact)
    fft_size = 2048
    max_dead_air_s = 2.8     # check: no beat ended right waits longer after its last word (optional)
    rule = "level"           # the rule the page runs (optional; docs/clock.md): check's dead air is its
    # hangover_s = 0.8       # with "stopped+quiet" or "level+stopped": under quiet_s (the level clock bounds it)

    [margins]
    quiet_margin_s = 0.2     # derive: quiet = max gap + margin; check: gaps < quiet - margin
    floor_margin_db = 3.0    # check: speech p5 at least this far above the floor
    onset_margin_s = 2.0     # derive: onset timeout = max latency + margin
    min_gap_s = 0.15         # shorter gaps are dips inside words
    speech_percentile = 5.0  # the low speech percentile the floor sits below
    speech_range_db = 20.0   # speech ticks are within this of their utterance's median
    min_saving_s = 0.3       # derive names a rule only if it saves this much median dead air

    [baseline]
    file = "baseline.json"   # per-recording beat count, onsets and max gap
    onset_tolerance_s = 0.05
    max_gap_tolerance_s = 0.05

    [agreement]              # page-logged levels (clock.level lines) against the recording
    lossless_tolerance = 0.0 # check, lossless capture: the 99th percentile of |logged - measured| at most this
    recorder_tolerance = 0.03  # check, MediaRecorder file: the same, at most this
    max_floor_disagreements = 0  # check, lossless capture: readings on the other side of the floor
    align_log = true         # shift the log by the estimated offset when the start is uncertain (default)
    search_s = 1.0           # the offset search spans +-search_s seconds (at most 10)

    [robustness]             # check fails when a margin (speechclock stress) is smaller
    min_gain_db = 6          # the voice may be 6 dB quieter (min_gain_up_db: louder)
    max_noise_dbfs = -50     # pink room noise up to -50 dBFS
    min_bitrate_kbps = 16    # an Opus re-encode down to 16 kb/s, DTX off and on
    max_loss_pct = 5         # 5 % of 20 ms packets lost, at random and in bursts
    min_pause_ms = 200       # every narration gap 200 ms longer

    [recordings."tour.webm"]
    voice = "alloy"
    model = "gpt-realtime"
    notes = "three stops"
    beats = 3                # expected beat count (0: no beats expected, check does not fail for none)
    # log = false            # no event log expected (check fails a recording without one otherwise)
    # speech = false         # no speech expected (a noise-only clip; check fails one without speech otherwise)

The config is found in the recordings folder, or given with ``--config``.
Every key is optional; a missing one keeps its default. Every value is
bounded (see :mod:`clock.core.thresholds` and :data:`clock.core.model.MARGIN_BOUNDS`),
and ``[baseline] file`` is a path inside the config's folder (the command
line's ``--baseline`` can point anywhere). A config is at most
:data:`~clock.io.files.MAX_CONFIG_BYTES`; a FIFO or a device is refused.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..core.agreement import MAX_SEARCH_S
from ..core.analyser import AnalyserOptions
from ..core.model import Margins
from ..core.stress import ROBUSTNESS
from ..core.thresholds import DEFAULT_THRESHOLDS, LEVEL, Thresholds, check_bounded, check_rule
from ..core.ticks import parse_period
from ..errors import ConfigError, InvalidParameterError
from .files import CONFIG_NAME, MAX_CONFIG_BYTES, find_config, read_text

__all__ = ["CONFIG_NAME", "AgreementConfig", "Baseline", "Config", "config_toml", "find_config", "read_config"]


_NUMBER = (int, float)
_THRESHOLD_KEYS = {
    "floor": _NUMBER,
    "quiet_s": _NUMBER,
    "onset_timeout_s": _NUMBER,
    "tick_s": (str, *_NUMBER),
    "fft_size": (int,),
    "max_dead_air_s": _NUMBER,
    "rule": (str,),
    "hangover_s": _NUMBER,
}
#: Checked together, once the others are (the hangover is bounded by the quiet time).
_RULE_KEYS = ("rule", "hangover_s")
_MARGIN_KEYS = {name: _NUMBER for name in Margins.__dataclass_fields__}
_BASELINE_KEYS = {"file": (str,), "onset_tolerance_s": _NUMBER, "max_gap_tolerance_s": _NUMBER}
_RECORDING_KEYS = {
    "voice": (str,),
    "model": (str,),
    "notes": (str,),
    "beats": (int,),
    "prompt": (str,),
    "log": (bool,),
    "speech": (bool,),
}
_ROBUSTNESS_KEYS = {name: _NUMBER for name in ROBUSTNESS}
_AGREEMENT_KEYS = {
    "lossless_tolerance": _NUMBER,
    "recorder_tolerance": _NUMBER,
    "max_floor_disagreements": (int,),
    "align_log": (bool,),
    "search_s": _NUMBER,
}


@dataclass(frozen=True, slots=True)
class AgreementConfig:
    """How closely page-logged levels must match the recording, and whether to align the log by them.

    Attributes
    ----------
    lossless_tolerance : float
        ``check`` fails when, for a recording whose start the log gives
        exactly (a lossless capture), the 99th percentile of
        ``|logged - measured|`` exceeds it: 0, as such a capture is bit-exact.
    recorder_tolerance : float
        The same for a recording whose start is uncertain (MediaRecorder): its
        Opus re-encoding and 10 ms slips of its timeline leave a p99 of about
        0.01-0.016 on syllabic speech at 0.1-0.3 RMS (measured in Chromium).
    max_floor_disagreements : int
        ``check`` fails when more readings than this fall on different sides
        of the floor in the log and in a lossless capture (for a recorder file
        they are reported only).
    align_log : bool
        Shift the event log by the offset its ``clock.level`` readings give
        when the recording's start is uncertain (MediaRecorder); on by
        default, so a recorder capture is aligned wherever its log allows.
    search_s : float
        The offset search spans ``±search_s`` seconds.
    """

    lossless_tolerance: float = 0.0
    recorder_tolerance: float = 0.03
    max_floor_disagreements: int = 0
    align_log: bool = True
    search_s: float = 1.0


#: The largest baseline tolerance (seconds) and expected beat count.
MAX_TOLERANCE_S = 60.0
MAX_BEATS = 1_000_000


@dataclass(frozen=True, slots=True)
class Baseline:
    """Where the baseline file is and how much drift it tolerates."""

    path: Path | None
    onset_tolerance_s: float = 0.05
    max_gap_tolerance_s: float = 0.05


@dataclass(frozen=True, slots=True)
class Config:
    """A parsed ``speechclock.toml`` (or the defaults, when there is none).

    Attributes
    ----------
    path : Path or None
    thresholds : Thresholds
    margins : Margins
    baseline : Baseline
    recordings : dict
        File name -> metadata (``voice``, ``model``, ``notes``, ``beats``, ...).
    agreement : AgreementConfig
        Tolerances for page-logged levels.
    robustness : dict
        ``[robustness]``: key (:data:`clock.core.stress.ROBUSTNESS`) -> the
        value each recording's margin must reach (``check`` stresses them).
    """

    path: Path | None = None
    thresholds: Thresholds = DEFAULT_THRESHOLDS
    margins: Margins = field(default_factory=Margins)
    baseline: Baseline = field(default_factory=lambda: Baseline(None))
    recordings: dict[str, dict[str, Any]] = field(default_factory=dict)
    agreement: AgreementConfig = field(default_factory=AgreementConfig)
    robustness: dict[str, float] = field(default_factory=dict)

    @property
    def baseline_path(self) -> Path:
        """The baseline file: ``[baseline] file``, else ``speechclock.baseline.json`` beside the config."""
        folder = self.path.parent if self.path is not None else Path(".")
        return self.baseline.path or folder / "speechclock.baseline.json"

    def meta(self, name: str) -> dict[str, Any]:
        """Metadata of a recording (by file name), or an empty dict."""
        return self.recordings.get(name, {})


def _table(section: Any, key: str, allowed: Mapping[str, tuple[type, ...]], where: Path) -> dict[str, Any]:
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: key '{key}': must be a table")
    for name, value in section.items():
        if name not in allowed:
            raise ConfigError(f"{where}: key '{key}.{name}': unknown key (known: {', '.join(sorted(allowed))})")
        types = allowed[name]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            kinds = " or ".join(sorted({t.__name__ for t in types}))
            raise ConfigError(f"{where}: key '{key}.{name}': must be {kinds}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{where}: key '{key}.{name}': must be finite, got {value!r}")
    return section


def read_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a ``speechclock.toml``.

    Raises
    ------
    ConfigError
        Unreadable, not a regular file, too large, not TOML, an unknown key,
        a wrong type or a value out of bounds; the message names the file
        and the key.
    """
    p = Path(path)
    doc = _toml(p)
    th = dict(_table(doc.get("thresholds", {}), "thresholds", _THRESHOLD_KEYS, p))
    if "tick_s" in th:
        with _key(p, "thresholds.tick_s"):
            th["tick_s"] = parse_period(th["tick_s"] if isinstance(th["tick_s"], str) else Fraction(str(th["tick_s"])))
    margins = _table(doc.get("margins", {}), "margins", _MARGIN_KEYS, p)
    base = _table(doc.get("baseline", {}), "baseline", _BASELINE_KEYS, p)
    _check_thresholds(th, p)
    for name, value in margins.items():
        with _key(p, f"margins.{name}"):
            Margins(**{name: float(value)})
    for name in ("onset_tolerance_s", "max_gap_tolerance_s"):
        if name in base:
            with _key(p, f"baseline.{name}"):
                check_bounded(base[name], name, 0.0, MAX_TOLERANCE_S, " s")
    thresholds = DEFAULT_THRESHOLDS.with_(**th)
    margin_values = Margins(**{k: float(v) for k, v in margins.items()})
    recordings = _recordings(doc, p)
    baseline = Baseline(
        _baseline_file(p, base["file"]) if "file" in base else None,
        float(base.get("onset_tolerance_s", 0.05)),
        float(base.get("max_gap_tolerance_s", 0.05)),
    )
    agreement = _agreement(doc, p)
    robust = _table(doc.get("robustness", {}), "robustness", _ROBUSTNESS_KEYS, p)
    for key, value in robust.items():
        low, high = ROBUSTNESS[key][3:]
        if not low <= value <= high:
            raise ConfigError(f"{p}: key 'robustness.{key}': must be in [{low:g}, {high:g}], got {value!r}")
    robustness = {key: float(robust[key]) for key in ROBUSTNESS if key in robust}
    return Config(p, thresholds, margin_values, baseline, recordings, agreement, robustness)


def _toml(p: Path) -> dict[str, Any]:
    """The config's TOML document, its top-level tables all known."""
    text = read_text(p, what="config", error=ConfigError, max_bytes=MAX_CONFIG_BYTES)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{p}: not valid TOML ({err})") from None
    except RecursionError:
        raise ConfigError(f"{p}: not valid TOML (arrays or tables nested too deeply)") from None
    except ValueError:  # an integer of more than 4300 digits
        raise ConfigError(f"{p}: not valid TOML (a number too long to read)") from None
    unknown = set(doc) - {"thresholds", "margins", "baseline", "recordings", "agreement", "robustness"}
    if unknown:
        raise ConfigError(
            f"{p}: unknown table or key '{sorted(unknown)[0]}' "
            "(known: agreement, baseline, margins, recordings, robustness, thresholds)"
        )
    return doc


def _check_thresholds(th: dict[str, Any], p: Path) -> None:
    """Each ``[thresholds]`` value within its bounds, and the rule with its hangover (``hangover_s`` made a float)."""
    for name, value in th.items():
        if name in _RULE_KEYS:
            continue
        with _key(p, f"thresholds.{name}"):
            DEFAULT_THRESHOLDS.with_(**{name: value})
            if name == "fft_size":
                AnalyserOptions(fft_size=value)
    if "rule" in th or "hangover_s" in th:
        with _key(p, "thresholds.hangover_s" if "hangover_s" in th else "thresholds.rule"):
            check_rule(
                th.get("rule", LEVEL),
                None if th.get("hangover_s") is None else float(th["hangover_s"]),
                quiet_s=float(th.get("quiet_s", DEFAULT_THRESHOLDS.quiet_s)),
            )
        if "hangover_s" in th:
            th["hangover_s"] = float(th["hangover_s"])


def _recordings(doc: dict[str, Any], p: Path) -> dict[str, dict[str, Any]]:
    """``[recordings."NAME"]``: each recording's metadata, its keys known and its beat count in bounds."""
    recordings_doc = doc.get("recordings", {})
    if not isinstance(recordings_doc, dict):
        raise ConfigError(f"{p}: key 'recordings': must be a table of tables")
    recordings = {
        name: dict(_table(meta, f"recordings.{name}", _RECORDING_KEYS, p)) for name, meta in recordings_doc.items()
    }
    for name, meta in recordings.items():
        if "beats" in meta and not 0 <= meta["beats"] <= MAX_BEATS:
            raise ConfigError(f"{p}: key 'recordings.{name}.beats': must be in [0, {MAX_BEATS}], got {meta['beats']}")
    return recordings


def _agreement(doc: dict[str, Any], p: Path) -> AgreementConfig:
    """``[agreement]``: the tolerances the page's logged levels are held to, each >= 0."""
    agree = _table(doc.get("agreement", {}), "agreement", _AGREEMENT_KEYS, p)
    for key in ("lossless_tolerance", "recorder_tolerance", "max_floor_disagreements", "search_s"):
        if key in agree and agree[key] < 0:
            raise ConfigError(f"{p}: key 'agreement.{key}': must be >= 0, got {agree[key]!r}")
    if "search_s" in agree:
        with _key(p, "agreement.search_s"):
            check_bounded(agree["search_s"], "search_s", 0.0, MAX_SEARCH_S, " s")
    defaults = AgreementConfig()
    return AgreementConfig(
        float(agree.get("lossless_tolerance", defaults.lossless_tolerance)),
        float(agree.get("recorder_tolerance", defaults.recorder_tolerance)),
        int(agree.get("max_floor_disagreements", defaults.max_floor_disagreements)),
        bool(agree.get("align_log", defaults.align_log)),
        float(agree.get("search_s", defaults.search_s)),
    )


@contextmanager
def _key(p: Path, key: str) -> Iterator[None]:
    """Turn an out-of-range value into a ConfigError naming the file and the key."""
    try:
        yield
    except InvalidParameterError as err:
        raise ConfigError(f"{p}: key '{key}': {err}") from None


def _baseline_file(config: Path, name: str) -> Path:
    """``[baseline] file``: a relative path that stays inside the config's folder."""
    where = f"{config}: key 'baseline.file'"
    rel = Path(name)
    if not name or "\0" in name or rel.is_absolute() or ".." in rel.parts or rel.name in ("", "."):
        raise ConfigError(
            f"{where}: must be a file name inside the config's folder (no '..', not absolute), got {name!r}; "
            "give --baseline FILE to use one elsewhere"
        )
    folder = config.parent
    path = folder / rel
    if not os.path.realpath(path).startswith(os.path.join(os.path.realpath(folder), "")):
        raise ConfigError(f"{where}: {name!r} leads out of the config's folder (through a symbolic link)")
    return path


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    import json

    return json.dumps(text, ensure_ascii=False)


def config_toml(
    thresholds: Thresholds,
    margins: Margins,
    recordings: Mapping[str, Mapping[str, Any]],
    *,
    source: str,
) -> str:
    """A ``speechclock.toml`` for the given thresholds, margins and per-recording entries (what
    ``derive --format toml`` writes); :func:`read_config` reads it back to the same values.

    ``recordings`` maps a file name to its keys (``beats``, ``log``, ``speech``, ``voice``, ...), in order.
    """
    th = thresholds
    tick = th.tick_s
    lines = [
        f"# speechclock.toml written by speechclock {source}",
        "# Commit it beside the recordings: `speechclock check` fails CI when a recording contradicts it.",
        "",
        "[thresholds]",
        f"floor = {th.floor!r}",
        f"quiet_s = {th.quiet_s!r}",
        f"onset_timeout_s = {th.onset_timeout_s!r}",
        f'tick_s = "{tick.numerator}/{tick.denominator}"' if tick.denominator != 1 else f'tick_s = "{tick.numerator}"',
        f"fft_size = {th.fft_size}",
    ]
    if th.max_dead_air_s is not None:
        lines.append(f"max_dead_air_s = {th.max_dead_air_s!r}")
    lines += ["", "[margins]"]
    lines += [f"{name} = {getattr(margins, name)!r}" for name in Margins.__dataclass_fields__]
    for name, keys in recordings.items():
        lines += ["", f"[recordings.{_toml_string(name)}]"]
        for key, value in keys.items():
            if key not in _RECORDING_KEYS:
                continue
            if isinstance(value, bool):
                shown = "true" if value else "false"
            elif isinstance(value, int):
                shown = str(value)
            else:
                shown = _toml_string(str(value))
            lines.append(f"{key} = {shown}")
    return "\n".join(lines) + "\n"
