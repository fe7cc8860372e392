"""`levels` CSV: formatted per chunk in a second thread, the same bytes as repr() per row."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf

from clock.cli.levels import write_behind
from clock.core.analyser import AnalyserOptions
from clock.core.levels import levels
from clock.core.ticks import Ticks, parse_period
from clock.io.decode import iter_blocks, probe


def reference_csv(path, *, ticks: Ticks, metric: str = "rms", fft_size: int = 2048) -> str:
    """What `levels` wrote before: one f-string per row, floats as repr()."""
    info = probe(path)
    trace = levels(
        iter_blocks(info), info.sample_rate_hz, ticks=ticks, metric=metric, options=AnalyserOptions(fft_size)
    )
    k = np.arange(trace.n_ticks)
    t_s = trace.frames / info.sample_rate_hz  # a tick's time: its frame over the rate
    rows = zip(k.tolist(), t_s.tolist(), trace.frames.tolist(), trace.level.tolist())
    return "tick,t_s,frame,level\n" + "".join(f"{i},{t!r},{f},{v!r}\n" for i, t, f, v in rows)


@pytest.fixture
def tricky(tmp_path, rng):
    """Exact zeros, denormal-small and full-scale samples, long enough for many chunks."""
    rate = 44100
    x = (rng.standard_normal(rate * 6) * 0.2).astype(np.float32)
    x[rate : 2 * rate] = 0.0
    x[2 * rate : 3 * rate] *= 1e-30
    x[3 * rate : 3 * rate + 500] = 1.0
    path = tmp_path / "tricky.wav"
    sf.write(str(path), x, rate, subtype="FLOAT")
    return path


@pytest.mark.parametrize(
    "args, ticks, metric",
    [
        ([], Ticks(), "rms"),
        (["--tick-frames", "128"], Ticks.every_frames(128, 44100), "rms"),
        (["--metric", "max-db"], Ticks(), "max-db"),  # -inf on silence
        (["--metric", "peak", "--tick", "0.05"], Ticks(parse_period("0.05")), "peak"),
    ],
)
def test_csv_bytes_are_the_per_row_repr(cli, tricky, args, ticks, metric, tmp_path):
    out = tmp_path / "levels.csv"
    result = cli("levels", tricky, *args, "-o", out)
    assert result.exit_code == 0
    text = out.read_bytes().decode()
    assert text == reference_csv(tricky, ticks=ticks, metric=metric)
    assert cli("levels", tricky, *args).stdout == text
    if metric == "max-db":
        assert ",-inf\n" in text
    if "--tick-frames" in args:
        assert text.count("\n") > 2000  # 512 ticks per decoded block: several chunks


def test_an_error_while_writing_stops_the_run():
    class Full(io.StringIO):
        def write(self, s):
            raise OSError(28, "No space left on device")

    made = []

    def parts():
        for i in range(1000):
            made.append(i)
            yield lambda: "row\n"

    with pytest.raises(OSError, match="No space left"):
        write_behind(Full(), parts(), depth=2)
    assert len(made) < 1000  # the producer stopped early


def test_an_error_while_computing_keeps_what_came_before_in_order():
    out = io.StringIO()

    def parts():
        for i in range(50):
            yield lambda i=i: f"{i}\n"
        raise ValueError("decoder failed")

    with pytest.raises(ValueError, match="decoder failed"):
        write_behind(out, parts(), depth=3)
    assert out.getvalue() == "".join(f"{i}\n" for i in range(50))
