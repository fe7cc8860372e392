"""``speechclock stress``: each axis against a construction whose break point is known."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import clock
import clock.run.stress
import clock.run.workers
from clock.core.outcome import FAILURES
from clock.core.stress import first_failure, lines, pink_noise, stretch_gaps
from clock.io.transforms import FRAME, OPUS_RATE_HZ, LossDraws, _libopus, decode, encode, lost_packets
from clock.run.stress import stress_observations

FLOOR, QUIET_S, TIMEOUT_S = 0.003, 2.0, 10.0
SETTING = [("committed", FLOOR, QUIET_S, TIMEOUT_S)]


def tone(freq_hz: float, rms: float, dur_s: float, rate: int) -> np.ndarray:
    """A steady sine of this RMS with 5 ms ramps."""
    n = int(round(dur_s * rate))
    x = math.sqrt(2) * rms * np.sin(2 * np.pi * freq_hz * np.arange(n) / rate)
    r = int(0.005 * rate)
    x[:r] *= np.linspace(0, 1, r)
    x[-r:] *= np.linspace(1, 0, r)
    return x


def recording(
    folder: Path,
    name: str,
    syllables: list[tuple[float, float, float, float]],
    *,
    rate: int = 16000,
    duration_s: float = 9.5,
    hum_rms: float = 0.0,
    terminal_s: float = 0.5,
) -> Path:
    """A WAV of syllables (start s, length s, RMS, Hz) after one terminal response, with its event log."""
    x = np.zeros(int(duration_s * rate))
    for start, length, rms, freq in syllables:
        y = tone(freq, rms, length, rate)
        i = int(round(start * rate))
        x[i : i + y.size] += y
    if hum_rms:
        x += math.sqrt(2) * hum_rms * np.sin(2 * np.pi * 100 * np.arange(x.size) / rate)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.wav"
    sf.write(path, x.astype(np.float32), rate, subtype="FLOAT")
    (folder / f"{name}.events.jsonl").write_text(json.dumps({"type": "terminal_response", "t_ms": terminal_s * 1000}))
    return path


# Loud words around one quiet syllable (RMS 0.01, 10.5 dB above the floor) with 1 s gaps either side: hidden
# under the floor, the quiet syllable leaves a 2.4 s gap, past the quiet time of 2 s (a premature end).
QUIET_SYLLABLE = [(1.0, 0.5, 0.1, 250), (1.8, 0.5, 0.1, 250), (3.3, 0.4, 0.01, 250), (4.7, 0.5, 0.1, 250)]
#: Loud words with a gap of 1.8 s (the quiet time, 2 s, bridges it with 0.2 s to spare).
LONG_GAP = [(1.0, 0.5, 0.1, 250), (1.8, 0.5, 0.1, 250), (4.1, 0.5, 0.1, 250)]
#: Loud words with gaps of 0.3 s.
WORDS = [(1.0, 0.5, 0.1, 250), (1.8, 0.5, 0.1, 250), (2.6, 0.5, 0.1, 250), (3.4, 0.5, 0.1, 250)]


def run(folder: Path, *, axes, search="bisect", setting=SETTING, seed=0):
    corpus = clock.load_corpus([folder], cache=False)
    sources = [r.info.path for r in corpus.recordings]
    return stress_observations(sources, corpus.observations, setting, axes=axes, search=search, seed=seed)


def margin(result, name, k=0):
    return next(m for m in result.settings[k].margins if m.name == name)


def truth_fails(obs, trace, events=None) -> bool:
    """Brute force: the tick-by-tick replay of a changed recording has a failing beat, or a spoken beat goes silent."""
    events = events or obs.events
    before = clock.beats(obs.trace, obs.events, floor=FLOOR, quiet_s=QUIET_S, onset_timeout_s=TIMEOUT_S)
    after = clock.beats(trace, events, floor=FLOOR, quiet_s=QUIET_S, onset_timeout_s=TIMEOUT_S)
    return any(b.outcome in FAILURES for b in after) or sum(b.outcome == "ok" for b in after) < sum(
        b.outcome == "ok" for b in before
    )


def test_gain_breaks_the_floor_and_the_hum_where_the_arithmetic_says(tmp_path):
    # The quiet syllable (RMS 0.01, with a hum of 0.001 under it) falls under the floor 0.003 once the gain is
    # below 20 log10(0.003 / 0.01005) = -10.5 dB; the hum (RMS 0.001) rises over it above 20 log10(3) = 9.5 dB
    # and the level never falls under the floor after the last word (a stall).
    recording(tmp_path, "quiet", QUIET_SYLLABLE, hum_rms=0.001)
    bisect = run(tmp_path, axes=["gain"])
    step = run(tmp_path, axes=["gain"], search="step")
    down, up = margin(bisect, "gain down"), margin(bisect, "gain up")
    assert (down.holds_to, down.first_failure) == (-10.0, -11.0)
    assert down.failure is not None and down.failure.outcome == "premature" and down.failure.threshold == "quiet_s"
    assert (up.holds_to, up.first_failure) == (9.0, 10.0)
    assert up.failure is not None and up.failure.outcome == "stalled" and up.failure.threshold == "floor"
    assert step.settings == bisect.settings


def test_noise_breaks_where_its_level_crosses_the_floor(tmp_path, monkeypatch):
    recording(tmp_path, "words", WORDS)
    replayed = []
    judge = clock.run.stress.judge
    monkeypatch.setattr(clock.run.stress, "judge", lambda *a, **k: replayed.append(1) or judge(*a, **k))
    result = run(tmp_path, axes=["noise"])
    m = margin(result, "noise")
    floor_dbfs = 20 * math.log10(FLOOR)  # -50.5 dBFS
    # Pink noise's level over one analyser window strays about 1 dB from its RMS.
    assert m.first_failure is not None and abs(m.first_failure - floor_dbfs) <= 1.5
    # Noise far under the floor leaves the speech as it is: those values hold without a replay of their own.
    values = lines(tick_s=0.01, axes=["noise"])[0].values
    assert len(replayed) < values.index(m.first_failure)
    # The break point is the tick-by-tick replay's, tried at every level.
    corpus = clock.load_corpus([tmp_path], cache=False)
    obs = corpus.observations[0]
    x, rate = sf.read(corpus.recordings[0].info.path, dtype="float32")
    noise = pink_noise(x.size, rate, seed=clock.core.stress.recording_seed(0, obs.name))
    values = lines(tick_s=obs.trace.tick_s, axes=["noise"])[0].values
    first = next(
        v
        for v in values
        if truth_fails(obs, clock.levels(np.clip(x + noise * np.float32(10 ** (v / 20)), -1, 1), rate))
    )
    assert m.first_failure == first
    # Its first failure is a noise bump over the floor after the clock declared quiet (it counts as speech), or a
    # stall; a dB past the floor's level, every window of the noise is over it and the beat stalls.
    assert m.failure is not None and m.failure.outcome in ("premature", "stalled")
    above = clock.levels(np.clip(x + noise * np.float32(10 ** (math.ceil(floor_dbfs + 1) / 20)), -1, 1), rate)
    found = clock.beats(above, obs.events, floor=FLOOR, quiet_s=QUIET_S, onset_timeout_s=TIMEOUT_S)
    assert [b.outcome for b in found] == ["stalled"]
    assert run(tmp_path, axes=["noise"], search="step").settings == result.settings


def test_codec_breaks_when_libopus_narrows_the_band_below_a_high_syllable(tmp_path):
    # A syllable at 10 kHz: libopus keeps super-wideband (12 kHz) for a mono voice down to 13 kb/s
    # (threshold 13.5 kb/s less its 1 kb/s hysteresis), and codes wideband (8 kHz) below: at 12 kb/s the
    # syllable is gone and the gap it leaves (2.4 s) ends the beat early.
    syllables = [(1.0, 0.5, 0.1, 300), (1.8, 0.5, 0.1, 300), (3.3, 0.4, 0.03, 10000), (4.7, 0.5, 0.1, 300)]
    recording(tmp_path, "high", syllables, rate=48000, duration_s=8.0)
    result = run(tmp_path, axes=["codec"])
    off, on = margin(result, "codec dtx-off"), margin(result, "codec dtx-on")
    assert (off.holds_to, off.first_failure) == (13.0, 12.0)
    assert off.failure is not None and off.failure.outcome == "premature"
    assert on.first_failure == 12.0


def test_pause_breaks_when_the_longest_gap_reaches_the_quiet_time(tmp_path):
    recording(tmp_path, "gaps", LONG_GAP)
    corpus = clock.load_corpus([tmp_path], cache=False)
    obs = corpus.observations[0]
    a = clock.analyse(obs.trace, obs.events, floor=FLOOR)
    need = a.beats[0].need_s  # the longest quiet the clock bridges (about 1.8 s)
    tick = obs.trace.tick_s
    expected_ticks = math.ceil((QUIET_S - need) / tick - 1e-9)  # the first stretch at which that quiet reaches it
    result = run(tmp_path, axes=["pause"])
    m = margin(result, "pause")
    found = round(m.first_failure / (tick * 1000))
    assert m.first_failure == pytest.approx(found * tick * 1000, abs=0.05)
    # A tick's time is its frame over the rate (a render-quantum boundary, up to one quantum after
    # k * tick), so the quiet reaches the quiet time within one tick of the nominal count; the
    # stretches on either side of it say exactly where.
    assert abs(found - expected_ticks) <= 1
    assert m.failure is not None and m.failure.outcome == "premature"
    # The failing beat is placed on the unchanged recording's timeline.
    assert 0 <= m.failure.t_s <= obs.trace.t_s[-1]
    stretched, events, _ = stretch_gaps(obs.trace, obs.events, floor=FLOOR, extra_ticks=found)
    assert truth_fails(obs, stretched, events)
    stretched, events, _ = stretch_gaps(obs.trace, obs.events, floor=FLOOR, extra_ticks=found - 1)
    assert not truth_fails(obs, stretched, events)


def test_stretch_moves_later_events_and_maps_times_back(tmp_path):
    recording(tmp_path, "gaps", LONG_GAP)
    obs = clock.load_corpus([tmp_path], cache=False).observations[0]
    stretched, events, back = stretch_gaps(obs.trace, obs.events, floor=FLOOR, extra_ticks=6)
    n_gaps = len([g for g in clock.analyse(obs.trace, obs.events, floor=FLOOR).gaps() if g[3]])
    assert stretched.n_ticks == obs.trace.n_ticks + 6 * n_gaps
    assert events.events[0].t_s == obs.events.events[0].t_s  # the terminal response comes before every gap
    assert back(float(stretched.t_s[-1])) == pytest.approx(float(obs.trace.t_s[-1]))


def _reference_decode(packets: list[bytes | None]) -> np.ndarray:
    """libopus decoding a packet sequence, a missing packet asked for with no data (its own concealment)."""
    lib = ctypes.CDLL(_libopus()._name)
    lib.opus_decoder_create.restype = ctypes.c_void_p
    err = ctypes.c_int()
    dec = ctypes.c_void_p(lib.opus_decoder_create(48000, 1, ctypes.byref(err)))
    out = []
    for p in packets:
        pcm = (ctypes.c_int16 * 960)()
        data, size = (None, 0) if p is None else (ctypes.c_char_p(p), len(p))
        n = lib.opus_decode(dec, data, ctypes.c_int32(size), pcm, ctypes.c_int(960), ctypes.c_int(0))
        assert n == 960
        out.append(np.frombuffer(pcm, np.int16).copy())
    lib.opus_decoder_destroy(dec)
    return np.concatenate(out)


def test_lost_packets_are_concealed_as_libopus_conceals_them():
    rate = OPUS_RATE_HZ
    x = np.concatenate([tone(220, 0.1, 0.6, rate), np.zeros(rate // 5), tone(330, 0.05, 0.6, rate)]).astype(np.float32)
    e = encode(x, rate, bitrate_kbps=32)
    lost = np.zeros(len(e.packets), bool)
    lost[[5, 6, 7, 40]] = True  # a burst inside the first tone, one packet inside the second
    got = decode(e, lost)
    ref = _reference_decode([None if gone else p for p, gone in zip(e.packets, lost)])
    ref_f = clock.io.decode.webrtc_int16_to_float32(ref[e.lookahead : e.lookahead + x.size])
    np.testing.assert_array_equal(got, ref_f)
    # Concealment continues the voice (not silence) and is not the packet it replaces.
    whole = decode(e)
    span = slice(5 * FRAME - e.lookahead, 8 * FRAME - e.lookahead)
    assert np.sqrt(np.mean(got[span] ** 2)) > 0.01
    assert not np.array_equal(got[span], whole[span])
    assert np.array_equal(got[: 5 * FRAME - e.lookahead], whole[: 5 * FRAME - e.lookahead])


def test_lost_packets_are_seeded_nested_and_in_bursts():
    n = 100_000
    a = lost_packets(n, 5, burst=False, seed=1)
    b = lost_packets(n, 12, burst=False, seed=1)
    # Each packet lost with probability p: within 5 standard deviations of p * n, and nested.
    for got, p in ((a, 0.05), (b, 0.12)):
        assert abs(int(got.sum()) - p * n) < 5 * math.sqrt(n * p * (1 - p))
    assert not (a & ~b).any()
    assert np.array_equal(a, lost_packets(n, 5, burst=False, seed=1))
    c = lost_packets(n, 5, burst=True, seed=1)
    d = lost_packets(n, 12, burst=True, seed=1)
    assert not (c & ~d).any() and abs(int(c.sum()) - 0.05 * n) < 5 * 5 * math.sqrt(n / 5 * 0.05 * 0.95)
    # Whole bursts of 100 ms: every run of lost packets is whole slots of 5 (the first may be cut by the offset).
    edges = np.flatnonzero(np.diff(np.concatenate([[0], c.astype(int), [0]])))
    starts, ends = edges[::2], edges[1::2]
    offset = int(starts[1] % 5)
    assert all(s % 5 == offset and e % 5 == offset for s, e in zip(starts[1:], ends[:-1]))
    # Drawn packet by packet as they come, the same packets are lost.
    for burst in (False, True):
        draws = LossDraws(7, burst=burst, seed=4)
        parts = np.concatenate([draws.next(k) for k in (1, 2, 997, 3, 40_000, 0, 58_997)])
        assert np.array_equal(parts, lost_packets(n, 7, burst=burst, seed=4))


def test_loss_break_point_is_the_replays_at_every_loss(tmp_path):
    # Words just above the floor with a quiet time just above their longest gap: a concealed packet at a word's
    # edge lengthens the gap past the quiet time somewhere along the line, and nowhere before the replay says.
    syllables = [(1.0, 0.5, 0.0045, 250), (1.9, 0.5, 0.0045, 250), (2.8, 0.5, 0.0045, 250), (3.7, 0.5, 0.0045, 250)]
    recording(tmp_path, "edges", syllables, duration_s=8.0)
    corpus = clock.load_corpus([tmp_path], cache=False)
    obs = corpus.observations[0]
    need = clock.analyse(obs.trace, obs.events, floor=FLOOR).beats[0].need_s
    quiet = round(need + 0.02, 3)
    setting = [("candidate", FLOOR, quiet, TIMEOUT_S)]
    result = run(tmp_path, axes=["loss"], setting=setting)
    x, rate = sf.read(corpus.recordings[0].info.path, dtype="float32")
    e = encode(x, rate, bitrate_kbps=64)
    seed = clock.core.stress.recording_seed(0, obs.name)
    broke = []
    for m in result.settings[0].margins:
        burst = m.variant == "burst"
        fails = []
        for p in clock.core.stress.LOSS_PCT:
            trace = clock.levels(decode(e, lost_packets(len(e.packets), p, burst=burst, seed=seed)), rate)
            after = clock.beats(trace, obs.events, floor=FLOOR, quiet_s=quiet, onset_timeout_s=TIMEOUT_S)
            fails.append(any(b.outcome in FAILURES for b in after))
        expected = clock.core.stress.LOSS_PCT[fails.index(True)] if any(fails) else None
        assert m.first_failure == expected, m
        broke.append(expected)
    assert any(b is not None for b in broke)  # the construction breaks somewhere on the loss axis
    assert run(tmp_path, axes=["loss"], setting=setting, search="step").settings == result.settings


def test_the_search_replays_every_value_up_to_the_first_failure_even_when_failures_are_not_nested():
    for n in (1, 2, 7, 59):
        for brk in range(n + 1):
            for search in ("step", "bisect"):
                calls: list[int] = []

                def fails(i: int, brk: int = brk, calls: list[int] = calls) -> bool:
                    calls.append(i)
                    return brk <= i <= brk + 1  # fails at brk and brk + 1, then holds again

                assert first_failure(n, fails, search=search) == (brk if brk < n else None)
                assert calls == list(range(min(brk + 1, n)))  # every value in order, none past the failure


def test_setting_that_already_fails_has_no_margin(tmp_path):
    recording(tmp_path, "quiet", QUIET_SYLLABLE)
    result = run(tmp_path, axes=["gain", "pause"], setting=[("candidate", FLOOR, 0.5, TIMEOUT_S)])
    s = result.settings[0]
    assert s.unchanged.tally.n_failed > 0
    assert all(m.fails_unchanged and m.holds_to is None and m.first_failure is None for m in s.margins)
    assert all(m.margin_fraction == 0 and m.failure is not None for m in s.margins)
    assert "the setting fails on the recording as it is" in clock.stress_text(result)


def test_cli_text_json_and_jobs_give_the_same_bytes(cli, tmp_path):
    recording(tmp_path / "c", "a", QUIET_SYLLABLE, hum_rms=0.001)
    recording(tmp_path / "c", "b", WORDS)
    args = ["stress", tmp_path / "c", "--floor", FLOOR, "--quiet-time", QUIET_S, "--axes", "gain,pause,loss"]
    serial = cli(*args, "--format", "json", "--no-recommended")
    parallel = cli(*args, "--format", "json", "--no-recommended", "-j", "2")
    assert serial.exit_code == 0, serial.output
    assert serial.stdout == parallel.stdout
    doc = json.loads(serial.stdout)
    unchanged = doc["settings"][0]["unchanged"]  # every beat counted once, as the text counts it
    kinds = ("ok", "premature", "stalled", "missed_onset", "outpaced", "aborted", "silent")
    assert unchanged["beats"] == sum(unchanged[k] for k in kinds) == 2
    gain_down = doc["settings"][0]["margins"][0]
    assert (gain_down["holds_to"], gain_down["first_failure"]) == (-10.0, -11.0)
    assert gain_down["failure"]["recording"] == "a.wav"
    text = cli(*args, "--no-recommended", "--plot", tmp_path / "m.png")
    assert text.exit_code == 0, text.output
    line = r"\n  gain down +-10 \.\. 0 dB; first failure at -11 dB: a\.wav:00:04\.400: beat 1 premature \(quiet_s\)"
    assert re.search(line, text.stdout)
    assert (tmp_path / "m.png").stat().st_size > 0


def test_on_a_pool_a_recordings_lines_run_in_groups_and_give_the_serial_result(tmp_path, monkeypatch):
    # Every axis, two settings, two recordings of one length, two bitrates a codec line (to keep it short). On three
    # workers, each recording's work is more than a worker's share, so its lines run as tasks by the work they share:
    # gain and noise (the decoded samples), codec dtx-off with loss (the 64 kb/s encode), codec dtx-on, pause; the
    # margins, failures and counts are a serial run's, and progress comes once a recording, when its last group is
    # done. On two workers, each recording is a worker's share: one task a recording (its lines share its passes).
    monkeypatch.setattr(clock.core.stress, "CODEC_KBPS", (64.0, 16.0))
    recording(tmp_path, "a", QUIET_SYLLABLE, hum_rms=0.001)
    recording(tmp_path, "b", WORDS)
    corpus = clock.load_corpus([tmp_path], cache=False)
    sources = [r.info.path for r in corpus.recordings]
    settings = [*SETTING, ("other", 0.004, 2.0, 10.0)]
    serial = stress_observations(sources, corpus.observations, settings)
    assert any(m.first_failure is not None for s in serial.settings for m in s.margins)  # something to agree on
    sent = []
    real = clock.run.stress.run_ordered

    def spy(func, items, **kwargs):
        sent.extend((t.obs.name, tuple(line.name for line in t.lines)) for t in items)
        return real(func, items, **kwargs)

    monkeypatch.setattr(clock.run.stress, "run_ordered", spy)
    done = []
    parallel = stress_observations(
        sources, corpus.observations, settings, workers=clock.run.workers.Workers(jobs=3), progress=done.append
    )
    assert parallel == serial
    assert sorted(done) == [0, 1]
    groups = [
        ("gain down", "gain up", "noise"),
        ("codec dtx-off", "loss random", "loss burst"),
        ("codec dtx-on",),
        ("pause",),
    ]
    assert sorted(sent) == sorted((name, g) for name in ("a.wav", "b.wav") for g in groups)
    sent.clear()
    two = stress_observations(sources, corpus.observations, settings, workers=clock.run.workers.Workers(jobs=2))
    assert two == serial
    assert [name for name, _ in sent] == ["a.wav", "b.wav"]


def _task_that_warns_and_fails(task):
    """A stress task that warns and fails with its recording's name (for the test below, run in the pool)."""
    warnings.warn(f"{task.obs.name} warned", clock.errors.SpeechClockWarning, stacklevel=1)
    raise clock.errors.RecordingError(f"{task.obs.name} failed")


def test_split_on_a_pool_a_recordings_warnings_and_first_error_come_in_corpus_order(tmp_path, monkeypatch):
    # b is longer, so its groups go to the pool first; a serial run shows a's warning, then fails on a: so does this.
    monkeypatch.setattr(clock.run.stress, "_stress_task", _task_that_warns_and_fails)
    recording(tmp_path, "a", WORDS)
    recording(tmp_path, "b", WORDS, duration_s=19.0)
    corpus = clock.load_corpus([tmp_path], cache=False)
    sources = [r.info.path for r in corpus.recordings]
    with pytest.warns(clock.errors.SpeechClockWarning) as shown, pytest.raises(clock.errors.RecordingError) as err:
        stress_observations(
            sources, corpus.observations, SETTING, axes=("gain", "pause"), workers=clock.run.workers.Workers(jobs=3)
        )
    assert str(err.value) == "a.wav failed"
    assert [str(w.message) for w in shown] == ["a.wav warned"]  # once, though each of its two groups warned


def test_cli_unknown_axis_exits_2(cli, tmp_path):
    recording(tmp_path, "a", QUIET_SYLLABLE)
    result = cli("stress", tmp_path, "--axes", "gain,wind")
    assert result.exit_code == 2
    assert "wind" in result.output


def _write_config(folder: Path, robustness: str) -> None:
    (folder / "speechclock.toml").write_text(
        f"[thresholds]\nfloor = {FLOOR}\nquiet_s = {QUIET_S}\n\n[robustness]\n{robustness}\n"
    )


def test_check_fails_a_recording_whose_margin_is_below_the_config(cli, tmp_path):
    recording(tmp_path, "quiet", QUIET_SYLLABLE)  # breaks at -11 dB
    recording(tmp_path, "loud", WORDS)  # holds to -18 dB
    _write_config(tmp_path, "min_gain_db = 12\nmin_pause_ms = 100")
    junit = tmp_path / "out" / "j.xml"
    junit.parent.mkdir()
    result = cli("check", tmp_path, "--format", "json", "--junit", junit)
    doc = json.loads(result.stdout)
    robust = {(r["recording"], r["check"]): r for r in doc["results"] if r["check"].startswith("robustness-")}
    assert set(robust) == {
        (n, c) for n in ("loud.wav", "quiet.wav") for c in ("robustness-gain-down", "robustness-pause")
    }
    failed = robust[("quiet.wav", "robustness-gain-down")]
    assert not failed["passed"] and failed["measured"] == -11.0 and failed["threshold"] == -12.0
    assert "first failure at -11 dB" in failed["line"] and failed["line"].startswith("quiet.wav:00:04.400:")
    assert robust[("loud.wav", "robustness-gain-down")]["passed"]
    assert result.exit_code == 1
    xml = junit.read_text()
    assert 'classname="quiet.wav" name="robustness-gain-down"' in xml
    assert 'classname="loud.wav" name="robustness-gain-down"' in xml
    # A margin that reaches the config's passes: -10 dB holds.
    _write_config(tmp_path, "min_gain_db = 10")
    doc = json.loads(cli("check", tmp_path, "--format", "json").stdout)
    assert all(r["passed"] for r in doc["results"] if r["check"].startswith("robustness-"))


@pytest.mark.parametrize(
    "line, message",
    [("min_gain_db = 30", "robustness.min_gain_db': must be in [0, 18]"), ("wind = 3", "robustness.wind': unknown")],
)
def test_bad_robustness_table_exits_2_naming_the_key(cli, tmp_path, line, message):
    recording(tmp_path, "a", WORDS)
    _write_config(tmp_path, line)
    result = cli("check", tmp_path)
    assert result.exit_code == 2
    assert message in result.output and "speechclock.toml" in result.output


def test_derive_prefer_hands_every_setting_that_replays_right_and_takes_its_pick():
    from tours import random_corpus

    obs = [t.observation() for t in random_corpus(3)]
    seen: list[list[tuple[float, float, float]]] = []

    def last(candidates):
        seen.append(candidates)
        return len(candidates) - 1, "picked the last"

    plain = clock.derive(obs)
    picked = clock.derive(obs, prefer=last)
    assert seen and len(seen[0]) >= 1
    assert plain.setting == seen[0][0]  # the evidence's choice is the first
    assert picked.setting == seen[0][-1]
    assert "picked the last" in picked.floor.rule
    for floor, quiet, timeout in seen[0]:
        assert (
            clock.core.recommend.replay.judge(obs, floor=floor, quiet_s=quiet, onset_timeout_s=timeout).tally.n_failed
            == 0
        )


def test_derive_prefer_robust_takes_the_widest_smallest_margin(cli, tmp_path, monkeypatch):
    # The quiet syllable (RMS 0.0107) sets the floor 6 dB under it, rounded up to 0.0054, where a voice 6 dB
    # quieter already breaks it; the next floor the replay accepts, 0.0053, holds at -6 dB: robust takes it.
    # Gain decides it: two bitrates a codec line (to keep it short), for the test's stress and the command's alike.
    monkeypatch.setattr(clock.core.stress, "CODEC_KBPS", (64.0, 16.0))
    quiet = [(1.0, 0.5, 0.1, 250), (1.8, 0.5, 0.1, 250), (3.3, 0.4, 0.0107, 250), (4.7, 0.5, 0.1, 250)]
    recording(tmp_path, "quiet", quiet, hum_rms=0.0005)
    recording(tmp_path, "gaps", LONG_GAP, hum_rms=0.0005)
    corpus = clock.load_corpus([tmp_path], cache=False)
    seen = []
    clock.derive(corpus.observations, prefer=lambda c: (seen.append(c), (0, ""))[1])
    candidates = seen[0]
    result = stress_observations(
        [r.info.path for r in corpus.recordings],
        corpus.observations,
        [("c", *c) for c in candidates],
        cache=clock.run.stress.usable_cache(True),  # the command's: it decodes nothing again
    )
    scores = [clock.core.stress.robust_score(s) for s in result.settings]
    best = candidates[scores.index(max(scores))]
    assert best != candidates[0]  # the construction makes robustness choose another floor than the evidence
    doc = json.loads(cli("derive", tmp_path, "--prefer", "robust", "--format", "json").stdout)
    group = doc["groups"][0]
    assert (group["recommended"]["floor"], group["recommended"]["quiet_s"]) == best[:2]
    assert "preferred for robustness" in group["floor"]["rule"] and "gain down" in group["floor"]["rule"]
    plain = json.loads(cli("derive", tmp_path, "--format", "json").stdout)["groups"][0]
    assert plain["recommended"]["floor"] == candidates[0][0]


def test_a_second_run_reads_results_and_changed_traces_back_and_a_changed_recording_is_stressed_again(
    cli, tmp_path, monkeypatch
):
    folder = tmp_path / "c"
    recording(folder, "a", QUIET_SYLLABLE, hum_rms=0.001)
    recording(folder, "b", WORDS)
    base = ["stress", folder, "--axes", "gain,loss", "--format", "json", "--no-recommended"]
    cache = ["--cache", tmp_path / "cache"]
    other = ["--quiet-time", "1.9"]  # another candidate setting
    first = cli(*base, *cache)
    assert first.exit_code == 0, first.output
    scanned: list[str] = []
    real = clock.run.stress._scan
    monkeypatch.setattr(clock.run.stress, "_scan", lambda task: scanned.append(task.obs.name) or real(task))
    # The same run: each recording's result read back, nothing scanned.
    again = cli(*base, *cache)
    assert again.stdout == first.stdout and scanned == []
    # The same name with other content: stressed again (with it, the other recording, whose P it changed).
    recording(folder, "b", [(t, d, 2 * rms, f) for t, d, rms, f in WORDS])
    changed = cli(*base, *cache)
    assert "b.wav" in scanned and changed.stdout == cli(*base, "--no-cache").stdout

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded again")

    monkeypatch.setattr("clock.run.stress.iter_blocks", no_decoding)
    # Another setting: scanned, each changed recording's trace taken from the trace cache (nothing decoded).
    scanned.clear()
    moved = cli(*base, *other, *cache)
    assert moved.exit_code == 0 and sorted(scanned) == ["a.wav", "b.wav"]
    fresh = cli(*base, *other, "--no-cache")  # without the cache, the changes are decoded afresh (here: refused)
    assert fresh.exit_code != 0 and "decoded again" in fresh.output


def test_report_has_a_robustness_section_when_asked(cli, tmp_path, monkeypatch, figures_unrendered):
    monkeypatch.setattr(clock.core.stress, "CODEC_KBPS", (64.0, 16.0))  # (the section is the subject, not the codec)
    recording(tmp_path / "c", "quiet", QUIET_SYLLABLE)
    _write_config(tmp_path / "c", "min_gain_db = 12")
    out = tmp_path / "r.html"
    result = cli("report", tmp_path / "c", "--stress", "-o", out, "--floors", "0.003", "--quiet-times", "2")
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert '<section id="stress">' in page and 'href="#stress"' in page
    assert "first failure at -11 dB" in page
    assert "robustness-gain-down" in page  # the [robustness] check, as check counts it


def test_without_beats_nothing_is_claimed(cli, tmp_path):
    recording(tmp_path, "a", WORDS)
    (tmp_path / "a.events.jsonl").write_text(json.dumps({"type": "prompt", "t_ms": 100}))
    result = cli("stress", tmp_path, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["recordings"] == [] and all(s["margins"] == [] for s in doc["settings"])
    assert "nothing to replay" in cli("stress", tmp_path).stdout


# A quiet second beat (floor 0.003, quiet time 2 s): its first word at RMS 0.009, a dip syllable at 0.0063 a
# second after it, a last word at 0.008 a second after that. By construction, with the gain g (a factor
# 10 ** (g / 20): -6 dB 0.501, -7 dB 0.447, -8 dB 0.398, -9 dB 0.355, -10 dB 0.316):
# * down to -6 dB every word is above the floor (the dip at 0.00316): gaps of 1 s, every beat ends right;
# * at -7 and -8 dB the dip sinks (0.00282, 0.00251) while the last word stays (0.00358, 0.00318): a gap of
#   2.4 s, past the quiet time, and the last word comes after the clock declared quiet: beat 2 premature;
# * at -9 dB the last word sinks too (0.00284): the first word is the narration, and it ends right;
# * at -10 dB the first word sinks (0.00285): the clock hears nothing in the beat, which the voice spoke in.
# So the margin stops at -6 dB, though -9 dB passes: a bisection that trusts -9 dB overstates it.
DIPPED = [(1.0, 0.5, 0.05, 250), (2.0, 0.5, 0.05, 250), (6.5, 0.4, 0.009, 250), (7.9, 0.4, 0.0063, 250)]
DIPPED += [(9.3, 0.4, 0.008, 250)]


def dipped(folder: Path) -> Path:
    path = recording(folder, "dipped", DIPPED, duration_s=13.0)
    lines = [{"type": "terminal_response", "t_ms": 500}, {"type": "terminal_response", "t_ms": 6000}]
    (folder / "dipped.events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@pytest.mark.parametrize("search", ["step", "bisect"])
def test_a_margin_stops_before_the_first_failure_though_a_quieter_voice_passes(tmp_path, search):
    path = dipped(tmp_path)
    result = run(tmp_path, axes=["gain"], search=search)
    down = margin(result, "gain down")
    assert (down.holds_to, down.first_failure) == (-6.0, -7.0)
    # The failing beat and its reason are the judge's for the recording changed by -7 dB, and beats' too.
    corpus = clock.load_corpus([tmp_path], cache=False)
    obs = corpus.observations[0]
    x, rate = sf.read(path, dtype="float32")
    changed = dataclasses.replace(obs, trace=clock.levels(clock.core.stress.apply_gain(x, -7.0), rate))
    judged = clock.core.recommend.replay.judge([changed], floor=FLOOR, quiet_s=QUIET_S, onset_timeout_s=TIMEOUT_S)
    u = judged.unsatisfied[0]
    f = down.failure
    assert f is not None and (f.beat, f.outcome, f.reason, f.t_s) == (u.beat, u.outcome, u.reason, u.t_s)
    assert f.beat == 1 and f.outcome == "premature"
    found = clock.beats(changed.trace, obs.events, floor=FLOOR, quiet_s=QUIET_S, onset_timeout_s=TIMEOUT_S)
    assert [b.outcome for b in found] == ["ok", "premature"]
    text = clock.core.stress.margin_line(down)
    assert "first failure at -7 dB: dipped.wav:" in text and ": beat 2 premature (quiet_s)" in text


def test_a_spoken_beat_the_change_silences_fails_as_the_judge_calls_it(tmp_path):
    # Past -10 dB the second beat's every word is under the floor: on a line that starts there, the judge calls
    # that beat a missed onset (the guide spoke; the clock never heard it), and the failure says so, the floor's
    # (beat 2, not the first beat of the recording).
    path = dipped(tmp_path)
    corpus = clock.load_corpus([tmp_path], cache=False)
    obs = corpus.observations[0]
    x, rate = sf.read(path, dtype="float32")
    changed = dataclasses.replace(obs, trace=clock.levels(clock.core.stress.apply_gain(x, -10.0), rate))
    setting = ("committed", FLOOR, QUIET_S, TIMEOUT_S)
    task = clock.run.stress._Task(path, obs, (setting,), (), "step", 0, clock.core.model.Margins())
    f = clock.run.stress._Judged(task, setting).failure(changed)
    found = clock.beats(changed.trace, obs.events, floor=FLOOR, quiet_s=QUIET_S, onset_timeout_s=TIMEOUT_S)
    assert [b.outcome for b in found] == ["ok", "missed-onset"]
    assert f is not None and (f.beat, f.outcome, f.threshold) == (1, "missed-onset", "floor")


def test_derive_prefer_robust_without_a_quiet_time_keeps_the_evidences_setting(cli, tmp_path):
    # One unbroken syllable after the one terminal response: no gap inside a beat, so no quiet time is
    # recommended, and there is nothing to replay changed. Robust says so, and gives what plain derive gives.
    recording(tmp_path, "a", [(1.0, 2.0, 0.1, 250)], hum_rms=0.0005)
    robust = cli("derive", tmp_path, "--prefer", "robust", "--format", "json", "--no-cache")
    plain = cli("derive", tmp_path, "--format", "json", "--no-cache")
    assert robust.exit_code == plain.exit_code == 0, robust.output
    r, p = json.loads(robust.stdout)["groups"][0], json.loads(plain.stdout)["groups"][0]
    assert r["recommended"] == p["recommended"] and r["recommended"]["quiet_s"] is None
    assert "not preferred for robustness" in r["floor"]["rule"]


def test_a_changed_recording_is_judged_with_the_other_recordings_narration_pause_and_its_own_changed(tmp_path):
    """P for a changed recording is the longest narration pause of the others as they are and of it as changed.

    ``ended`` has a 1.7 s pause in its narration around a syllable just under the floor (RMS 0.0022), and the
    page ends the beat 1.2 s after its last word: as it is, the guide may have been between two sentences
    (1.2 s < P = 1.7 s: aborted). A voice 3 dB louder lifts the syllable over the floor (0.0031): its pauses
    fall to about 0.75 s, and the other recording's are 0.3 s, so the visitor ended it after the guide had
    finished (outpaced), not a failure. Brute force: the one judge over the corpus with ``ended`` changed.
    """
    folder = tmp_path
    syllables = [(1.0, 0.5, 0.1, 250), (2.25, 0.2, 0.0022, 250), (3.2, 0.5, 0.1, 250)]
    path = recording(folder, "ended", syllables)
    log = [{"type": "terminal_response", "t_ms": 500}, {"type": "end", "t_ms": 4900}]
    (folder / "ended.events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in log))
    recording(folder, "words", WORDS)
    corpus = clock.load_corpus([folder], cache=False)
    result = run(folder, axes=["gain"])
    x, rate = sf.read(path, dtype="float32")
    names = [o.name for o in corpus.observations]
    k = names.index("ended.wav")
    up = lines(tick_s=corpus.observations[k].trace.tick_s, axes=["gain"])[1]

    def judged(gain_db: float):
        changed = dataclasses.replace(
            corpus.observations[k], trace=clock.levels(clock.core.stress.apply_gain(x, gain_db), rate)
        )
        obs = [changed if i == k else o for i, o in enumerate(corpus.observations)]
        return clock.core.recommend.replay.judge(obs, floor=FLOOR, quiet_s=QUIET_S, onset_timeout_s=TIMEOUT_S)

    assert judged(0.0).tally.n_failed == 0 and judged(0.0).tally.n_aborted == 1
    # Louder, the beat the visitor ended is outpaced: the visitor's doing, not a failure of the setting, so the
    # line fails nowhere it did not fail before (brute force: the one judge at each value of the line).
    first = next(v for v in up.values if judged(v).tally.n_outpaced)
    assert first == 3.0 and judged(first).tally.n_failed == 0
    m = margin(result, "gain up")
    failing = [v for v in up.values if judged(v).tally.n_failed]
    assert m.first_failure == (failing[0] if failing else None)
    assert m.failure is None or m.failure.outcome != "outpaced"
    assert result.settings[0].unchanged.narration_pause_s == judged(0.0).narration_pause_s


def test_the_judge_reads_a_changed_recording_only_through_its_speech(tmp_path):
    # stress replays no changed recording whose speech (level above the floor) is that of one already judged
    # right: sound only while the judge reads nothing else of the levels. Levels moved anywhere but across the
    # floor give the same outcome, beat by beat, whether the setting holds or fails.
    recording(tmp_path, "words", WORDS, hum_rms=0.001)
    recording(tmp_path, "quiet", QUIET_SYLLABLE, hum_rms=0.001)
    for obs in clock.load_corpus([tmp_path], cache=False).observations:
        level = obs.trace.level
        moved = np.where(level > FLOOR, level * 1.7 + 0.01, level * 0.3)
        same = dataclasses.replace(obs, trace=dataclasses.replace(obs.trace, level=moved))
        for quiet in (QUIET_S, 0.1):  # one that holds, one that fails
            args = dict(floor=FLOOR, quiet_s=quiet, onset_timeout_s=TIMEOUT_S)
            a, b = clock.core.recommend.replay.judge([obs], **args), clock.core.recommend.replay.judge([same], **args)
            assert (a.tally.n_failed > 0) == (quiet == 0.1)
            assert (a.tally.n_beats, a.tally.n_ok, a.tally.n_failed, a.tally.n_silent, a.narration_pause_s) == (
                b.tally.n_beats, b.tally.n_ok, b.tally.n_failed, b.tally.n_silent, b.narration_pause_s,
            )  # fmt: skip
            assert [(u.beat, u.outcome, u.t_s) for u in a.unsatisfied] == [
                (u.beat, u.outcome, u.t_s) for u in b.unsatisfied
            ]
            before = clock.beats(obs.trace, obs.events, **args)
            after = clock.beats(same.trace, same.events, **args)
            assert [(x.outcome, x.quiet_declared_s) for x in before] == [(x.outcome, x.quiet_declared_s) for x in after]
