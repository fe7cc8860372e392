"""Property-based fuzzing of the command line.

Whatever the event lines, label lines, config or option values, a run ends with
exit 0, 1 (only ``check``: a check failed) or 2 (bad input or usage), prints
exactly one ``speechclock: error:`` line when it fails, nothing but
``speechclock:`` lines on stderr, and never a traceback.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clock.cli import main

RATE = 8000
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A short recording with speech-like bursts, its log, labels and config, in a folder of its own."""
    import soundfile as sf

    root = tmp_path_factory.mktemp("fuzz")
    x = np.zeros(3 * RATE, np.float32)
    for start in (0.3, 1.2, 2.1):
        a = int(start * RATE)
        x[a : a + RATE // 2] = 0.1 * np.sin(2 * np.pi * 300 * np.arange(RATE // 2) / RATE)
    sf.write(str(root / "rec.wav"), x, RATE, subtype="PCM_16")
    (root / "rec.events.jsonl").write_text('{"type": "terminal_response", "t": 0.2}\n')
    (root / "rec.labels.txt").write_text("0.3\t0.8\tone\n")
    return root


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)


def assert_contract(result, command: str) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in ({0, 1, 2} if command == "check" else {0, 2}), (result.exit_code, result.stderr)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert all(line.startswith("speechclock: ") for line in lines), result.stderr
    errors = [line for line in lines if line.startswith("speechclock: error: ")]
    if result.exit_code == 2:
        assert len(errors) == 1, result.stderr
        assert "internal error" not in errors[0], errors[0]
    else:
        assert errors == []


# --- strategies --------------------------------------------------------------------

numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**40), 10**40),
    st.sampled_from([0, -1, 1e308, -1e308, 1e-300, 5e-324, 1e7, 1e7 + 1]),
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
types = st.one_of(
    st.sampled_from(
        ["terminal_response", "response.done", "prompt", "arrival", "pause", "resume", "end", "clock.quiet"]
        + ["recording.started", "$\\frac{a}{$", "$x$", "\x00\x1b[31m", ""]
    ),
    st.text(max_size=30),
)


@st.composite
def event_records(draw) -> str:
    record: dict = {}
    if draw(st.booleans()):
        record["type"] = draw(st.one_of(types, json_values))
    for key in draw(st.lists(st.sampled_from(["t", "t_ms", "linger_s"]), max_size=3, unique=True)):
        record[key] = draw(st.one_of(numbers, json_values))
    if draw(st.booleans()):
        record["response"] = draw(json_values)
    return json.dumps(record, allow_nan=True)


event_lines = st.one_of(
    event_records(),
    st.text(max_size=60),
    st.integers(1, 100_000).map(lambda d: '{"type": "prompt", "t": 1, "x": ' + "[" * d + "]" * d + "}"),
    st.integers(1, 6000).map(lambda n: '{"type": "terminal_response", "t": ' + "9" * n + "}"),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
)
label_fields = st.one_of(
    st.floats(-1, 4).map(lambda x: f"{x:.3f}"), numbers.map(repr), numbers.map(str), st.text(max_size=12)
)
label_lines = st.one_of(
    st.tuples(label_fields, label_fields, st.text(max_size=12)).map("\t".join),
    st.text(max_size=40),
)


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


toml_values = st.recursive(
    st.one_of(
        st.booleans(),
        numbers,
        st.text(max_size=12),
        st.sampled_from(["1/60", "1e-9", "1e999999999", "0.05", "1/0", "-1", "baseline.json", "../x", "/etc/x"]),
    ),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=6,
)
KEYS = {
    "thresholds": ["floor", "quiet_s", "onset_timeout_s", "tick_s", "fft_size"],
    "margins": ["quiet_margin_s", "floor_margin_db", "onset_margin_s", "min_gap_s", "speech_percentile"],
    "baseline": ["file", "onset_tolerance_s", "max_gap_tolerance_s"],
    'recordings."rec.wav"': ["voice", "beats", "notes"],
    "colour": ["x"],
}


@st.composite
def configs(draw) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=80))
    out = []
    for table in draw(st.lists(st.sampled_from(sorted(KEYS)), max_size=3, unique=True)):
        out.append(f"[{table}]")
        for key in draw(st.lists(st.sampled_from(KEYS[table] + ["bogus"]), max_size=3, unique=True)):
            out.append(f"{key} = {toml_value(draw(toml_values))}")
    return "\n".join(out) + "\n"


option_values = st.one_of(
    st.sampled_from(["0.05", "1/60", "1", "2", "2048", "256", "0.003", "2.5", "16000", "8000", "ceil", "floor", "100"]),
    numbers.map(repr),
    numbers.map(str),
    st.text(max_size=16),
    st.sampled_from(["nan", "inf", "-inf", "snan", "1/60", "1e999999999", "0", "1e-9", "0x10", "1:2:0.1", "0:inf:1"]),
)
range_values = st.one_of(
    st.sampled_from(["0.001:0.005:0.001", "1:3:0.5", "0.003", "2.5", "0:1:0.25", "0.5:3600:100"]),
    st.tuples(option_values, option_values, option_values).map(":".join),
    option_values,
)
LEVEL_OPTIONS = ["--tick", "--tick-frames", "--fft-size", "--context-rate", "--align"]
CLOCK_OPTIONS = ["--floor", "--quiet-time", "--onset-timeout"]


# --- properties ---------------------------------------------------------------------


@FUZZ
@given(lines=st.lists(event_lines, max_size=6), lenient=st.booleans())
def test_any_event_log(folder, lines, lenient):
    log = folder / "fuzz.events.jsonl"
    log.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    args = ["beats", folder / "rec.wav", "--events", log, "--format", "json"] + (["--lenient"] if lenient else [])
    assert_contract(invoke(*args), "beats")


@FUZZ
@given(lines=st.lists(label_lines, max_size=6), command=st.sampled_from(["segments", "beats"]))
def test_any_label_track(folder, lines, command):
    labels = folder / "fuzz.labels.txt"
    labels.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    assert_contract(invoke(command, folder / "rec.wav", "--labels", labels), command)


@FUZZ
@given(text=configs(), command=st.sampled_from(["check", "levels", "beats", "derive"]))
def test_any_config(folder, text, command):
    config = folder / "fuzz.toml"
    config.write_bytes(text.encode("utf-8", "surrogatepass"))
    target = folder if command in ("check", "derive") else folder / "rec.wav"
    assert_contract(invoke(command, target, "--config", config), command)


@FUZZ
@given(
    command=st.sampled_from(["levels", "segments", "beats"]),
    options=st.dictionaries(st.sampled_from(LEVEL_OPTIONS + CLOCK_OPTIONS), option_values, max_size=3),
)
def test_any_option_value(folder, command, options):
    if command == "levels":
        options = {k: v for k, v in options.items() if k not in CLOCK_OPTIONS}
    args = [a for kv in options.items() for a in kv]
    assert_contract(invoke(command, folder / "rec.wav", *args), command)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(floors=range_values, quiets=range_values, jobs=st.one_of(st.sampled_from(["1", "2"]), option_values))
def test_any_sweep_range(folder, floors, quiets, jobs):
    assert_contract(invoke("sweep", folder, "--floors", floors, "--quiet-times", quiets, "--jobs", jobs), "sweep")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=option_values, end=option_values)
def test_any_plot_zoom(folder, tmp_path_factory, start, end):
    out = tmp_path_factory.getbasetemp() / "fuzz-plot.png"
    assert_contract(invoke("plot", folder / "rec.wav", "-o", out, "--start", start, "--end", end), "plot")


#: The options that run more of the tool over the same inputs (issue 24): each must keep the contract too.
COMBINATIONS = [
    ("derive", "--prefer", "robust"),
    ("derive", "--format", "js"),
    ("derive", "--format", "js", "--prefer", "robust"),
    ("stress", "--axes", "gain,pause"),
    ("compare", "--endpointers", "energy"),
]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(event_lines, max_size=4), combo=st.sampled_from(COMBINATIONS))
def test_any_event_log_with_each_option_combination(folder, tmp_path_factory, lines, combo):
    import shutil

    own = tmp_path_factory.mktemp("combo")
    shutil.copy(folder / "rec.wav", own / "rec.wav")
    (own / "rec.events.jsonl").write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    result = invoke(combo[0], own, *combo[1:], "--no-progress")
    assert_contract(result, combo[0])
    if "js" in combo and result.exit_code == 0:
        assert result.stdout.startswith("//") or "SPEECHCLOCK_CONFIG" in result.stdout
