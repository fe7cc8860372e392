"""The trace cache: keyed by content, options and tool; damaged entries recomputed with a warning."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import clock.io.recording as recording_module
import clock.run.cache as cache_module
from clock.core.analyser import AnalyserOptions
from clock.core.ticks import Ticks
from clock.errors import SpeechClockWarning
from clock.io.recording import read_recording
from clock.run.cache import TraceCache, default_folder, resolve_cache
from clock.run.corpus import load_corpus

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def decodes(monkeypatch):
    """How many recordings were decoded (each call of the decoder in read_recording)."""
    calls = []
    real = recording_module.iter_level_blocks

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(recording_module, "iter_level_blocks", counting)
    return calls


@pytest.fixture
def wav(tmp_path, rng) -> Path:
    path = tmp_path / "a.wav"
    x = (rng.standard_normal(48000) * 3000).astype(np.int16)
    x[10000:20000] = 0
    sf.write(str(path), x, 48000, subtype="PCM_16")
    return path


@pytest.fixture
def store(tmp_path) -> TraceCache:
    return TraceCache(tmp_path / "cache")


def same(a, b) -> bool:
    return (
        a.info == b.info
        and np.array_equal(a.trace.frames, b.trace.frames)
        and np.array_equal(a.trace.level, b.trace.level)
        and a.trace.ticks == b.trace.ticks
        and a.trace.options == b.trace.options
        and a.trace.metric == b.trace.metric
        and a.trace.sample_rate_hz == b.trace.sample_rate_hz
    )


def entries(store: TraceCache) -> list[Path]:
    return sorted((store.folder / "traces").rglob("*.trace"))


def test_a_hit_gives_the_same_recording_without_decoding(wav, store, decodes):
    cold = read_recording(wav, cache=store)
    assert len(decodes) == 1 and len(entries(store)) == 1
    warm = read_recording(wav, cache=store)
    assert len(decodes) == 1
    assert same(warm, cold) and same(warm, read_recording(wav))
    assert warm.trace.frames.dtype == np.int64 and warm.trace.level.dtype == np.float64
    assert not warm.trace.level.flags.writeable


@pytest.mark.parametrize(
    ("racy", "hashes"),
    # The stat index spares the hash of an unchanged file; but one hashed right after it was written is hashed
    # again (git's "racily clean" rule: a write in the same clock tick as the hash would not show in the mtime).
    [(False, 1), (True, 2)],
    ids=["unchanged-file-hashed-once", "racily-clean-file-hashed-again"],
)
def test_the_stat_index_spares_the_hash_only_of_a_file_not_written_just_before(wav, store, monkeypatch, racy, hashes):
    if not racy:
        monkeypatch.setattr(cache_module, "RACY_S", 0.0)
    hashed = []
    real = cache_module._sha256_of
    monkeypatch.setattr(cache_module, "_sha256_of", lambda f: hashed.append(1) or real(f))
    read_recording(wav, cache=store)
    read_recording(wav, cache=store)
    assert len(hashed) == hashes


def test_one_changed_byte_is_never_served_stale(wav, store, decodes, monkeypatch):
    monkeypatch.setattr(cache_module, "RACY_S", 0.0)  # trust the index as much as it ever is
    before = read_recording(wav, cache=store)
    st = wav.stat()
    data = bytearray(wav.read_bytes())
    data[-2001] ^= 0x40  # one byte of one sample near the end, same size
    with open(wav, "r+b") as f:
        f.write(data)
    os.utime(wav, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with its old mtime back
    assert wav.stat().st_size == st.st_size and wav.stat().st_mtime_ns == st.st_mtime_ns
    after = read_recording(wav, cache=store)
    assert len(decodes) == 2
    assert same(after, read_recording(wav))
    assert not np.array_equal(after.trace.level, before.trace.level)


def test_a_copy_elsewhere_shares_the_entry_and_is_named_as_itself(wav, store, decodes, tmp_path):
    read_recording(wav, cache=store)
    copy = tmp_path / "sub" / "b.wav"
    copy.parent.mkdir()
    shutil.copyfile(wav, copy)
    rec = read_recording(copy, cache=store)
    assert len(decodes) == 1
    assert rec.info.path == str(copy) and rec.name == "b.wav"


@pytest.mark.parametrize(
    "change",
    [
        {"options": AnalyserOptions(fft_size=1024)},
        {"options": AnalyserOptions(smoothing_time_constant=0.5)},
        {"ticks": Ticks(Fraction(1, 30))},
        {"ticks": Ticks(Fraction(1, 60), "floor")},
        {"context_rate_hz": 44100},
        {"metric": "peak"},
        {"quantum": True},
    ],
    ids=["fft_size", "smoothing", "tick", "align", "context_rate", "metric", "quantum"],
)
def test_every_option_that_shapes_a_trace_changes_the_key(wav, store, decodes, change):
    read_recording(wav, cache=store)
    changed = read_recording(wav, cache=store, **change)
    assert len(decodes) == 2 and len(entries(store)) == 2
    fresh = read_recording(wav, **change)
    assert same(changed, fresh)
    if change.get("quantum"):
        assert np.array_equal(changed.quantum.level, fresh.quantum.level)
    read_recording(wav, cache=store, **change)
    assert len(decodes) == 3  # the fresh read only: the changed options now hit


def test_a_new_tool_version_or_decoder_changes_the_key(wav, store, decodes, monkeypatch):
    read_recording(wav, cache=store)
    monkeypatch.setattr(cache_module, "tool_fingerprint", lambda: "another version")
    read_recording(wav, cache=store)
    assert len(decodes) == 2


def test_the_tool_fingerprint_covers_the_sources_and_the_decoders(tmp_path, monkeypatch):
    cache_module.tool_fingerprint.cache_clear()
    first = cache_module.tool_fingerprint()
    assert first == cache_module.tool_fingerprint() and len(first) == 64
    # An upgraded decoder (here a PyAV and its FFmpeg libraries found first on the path) changes it, file by file,
    # without importing it; its bytecode coming and going does not.
    (tmp_path / "av" / "__pycache__").mkdir(parents=True)
    (tmp_path / "av.libs").mkdir()
    (tmp_path / "av" / "__init__.py").write_text("# PyAV\n")
    (tmp_path / "av.libs" / "libavcodec.so.61").write_bytes(b"\0" * 100)
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    for change in (None, "pyc", "lib", "init"):
        if change == "pyc":
            (tmp_path / "av" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"x")
        elif change == "lib":
            (tmp_path / "av.libs" / "libavcodec.so.61").write_bytes(b"\0" * 101)
        elif change == "init":
            (tmp_path / "av" / "__init__.py").write_text("# PyAV 99\n")
        cache_module.tool_fingerprint.cache_clear()
        seen.append(cache_module.tool_fingerprint())
    cache_module.tool_fingerprint.cache_clear()
    assert first not in seen and seen[0] == seen[1] and len(set(seen)) == 3
    assert "av" not in sys.modules or sys.modules["av"].__file__ != str(tmp_path / "av" / "__init__.py")


def test_a_fresh_install_of_the_same_decoders_keeps_the_tool_fingerprint(tmp_path, monkeypatch):
    # A CI runner installs the same wheels anew: every file gets a new time, and its cache must stay warm. A decoder
    # is named by the hash its wheel's RECORD gives each file; a file written after its RECORD (changed since the
    # install) by its time again.
    body = b"# PyAV 18\n"
    record = f"av/__init__.py,sha256={hashlib.sha256(body).hexdigest()},{len(body)}\n"

    def install(at_ns: int) -> None:
        (tmp_path / "av").mkdir(exist_ok=True)
        (tmp_path / "av-18.dist-info").mkdir(exist_ok=True)
        (tmp_path / "av" / "__init__.py").write_bytes(body)
        (tmp_path / "av-18.dist-info" / "RECORD").write_text(record)
        os.utime(tmp_path / "av" / "__init__.py", ns=(at_ns, at_ns))
        os.utime(tmp_path / "av-18.dist-info" / "RECORD", ns=(at_ns + 1, at_ns + 1))  # pip writes it last

    def fingerprint() -> str:
        cache_module.tool_fingerprint.cache_clear()
        cache_module._recorded.cache_clear()
        return cache_module.tool_fingerprint()

    monkeypatch.syspath_prepend(str(tmp_path))
    install(10**18)
    first = fingerprint()
    install(2 * 10**18)  # the same wheel, installed later
    assert fingerprint() == first
    (tmp_path / "av" / "__init__.py").write_bytes(b"# PyAV 99\n")  # same size, changed after the install
    os.utime(tmp_path / "av" / "__init__.py", ns=(3 * 10**18, 3 * 10**18))
    changed = fingerprint()
    cache_module.tool_fingerprint.cache_clear()
    cache_module._recorded.cache_clear()
    assert changed != first


def test_only_the_decoders_own_record_files_name_their_files(tmp_path, monkeypatch):
    # An environment holds a hundred wheels; the fingerprint reads the RECORDs of PyAV, soundfile and soxr only. A
    # decoder's file that only another distribution's RECORD lists is named by its time: installed anew, it changes
    # the fingerprint; listed in PyAV's own RECORD, it is named by its hash, and a fresh install keeps it.
    body = b"# PyAV 18\n"
    line = f"av/__init__.py,sha256={hashlib.sha256(body).hexdigest()},{len(body)}\n"
    (tmp_path / "av").mkdir()

    def install(dist: str, at_ns: int) -> str:
        (tmp_path / dist).mkdir(exist_ok=True)
        (tmp_path / "av" / "__init__.py").write_bytes(body)
        (tmp_path / dist / "RECORD").write_text(line)
        os.utime(tmp_path / "av" / "__init__.py", ns=(at_ns, at_ns))
        os.utime(tmp_path / dist / "RECORD", ns=(at_ns + 1, at_ns + 1))  # pip writes it last
        cache_module.tool_fingerprint.cache_clear()
        cache_module._recorded.cache_clear()
        return cache_module.tool_fingerprint()

    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert install("not_a_decoder-1.0.dist-info", 10**18) != install("not_a_decoder-1.0.dist-info", 2 * 10**18)
        assert cache_module._recorded(str(tmp_path)) == {}
        shutil.rmtree(tmp_path / "not_a_decoder-1.0.dist-info")
        assert install("av-18.dist-info", 3 * 10**18) == install("av-18.dist-info", 4 * 10**18)
        assert list(cache_module._recorded(str(tmp_path))) == ["av/__init__.py"]
    finally:
        cache_module.tool_fingerprint.cache_clear()
        cache_module._recorded.cache_clear()


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "foreign"])
def test_a_damaged_entry_warns_and_is_recomputed_never_trusted(wav, store, decodes, damage, tmp_path):
    good = read_recording(wav, cache=store)
    (entry,) = entries(store)
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01
    elif damage == "truncate":
        data = data[: len(data) - 100]
    elif damage == "empty":
        data = bytearray()
    else:
        # A valid entry of another recording, filed under this one's name.
        other = tmp_path / "other.wav"
        sf.write(str(other), np.zeros(4800, np.int16), 48000, subtype="PCM_16")
        read_recording(other, cache=store)
        (foreign,) = [e for e in entries(store) if e != entry]
        data = bytearray(foreign.read_bytes())
    entry.write_bytes(bytes(data))
    n = len(decodes)
    with pytest.warns(SpeechClockWarning, match=r"damaged cache entry for .*a\.wav .*recomputed") as caught:
        again = read_recording(wav, cache=store)
    assert len(caught) == 1 and str(entry) in str(caught[0].message)
    assert len(decodes) == n + 1 and same(again, good)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_recording(wav, cache=store)  # the entry was rewritten whole
    assert len(decodes) == n + 1


def test_the_decoders_warnings_are_kept_and_shown_again_with_the_copys_name(store, tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"same bytes")
    b.write_bytes(b"same bytes")
    made = []

    def compute(path):
        def decode():
            made.append(path)
            warnings.warn(f"{path}: 0.250 s missing from the stream", SpeechClockWarning, stacklevel=2)
            warnings.warn("a message that names no file", SpeechClockWarning, stacklevel=2)
            from clock.io.decode import AudioInfo

            return AudioInfo(str(path), "X", "x", 8000, 1, 0, "soundfile"), []

        return decode

    for path in (a, b):
        with pytest.warns(SpeechClockWarning) as caught:
            info, traces = store.traces(path, {"p": 1}, compute(path))
        assert [str(w.message) for w in caught] == [
            f"{path}: 0.250 s missing from the stream",
            "a message that names no file",
        ]
        assert info.path == str(path)
    assert made == [a]


def test_writes_are_atomic_and_the_folder_is_tagged(wav, store):
    read_recording(wav, cache=store)
    assert (store.folder / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert not [p for p in store.folder.rglob("*") if p.name.endswith(".tmp")]


def test_an_unwritable_cache_warns_once_and_the_run_goes_on(wav, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    store = TraceCache(blocker / "cache")
    cache_module._warn_once.cache_clear()
    with pytest.warns(SpeechClockWarning, match="cannot write the trace cache") as caught:
        rec = read_recording(wav, cache=store)
        read_recording(wav, cache=store)
    assert len(caught) == 1 and same(rec, read_recording(wav))


def test_prune_removes_the_least_recently_used_first(tmp_path, rng):
    store = TraceCache(tmp_path / "cache")
    paths = []
    for i in range(3):
        p = tmp_path / f"{i}.wav"
        sf.write(str(p), (rng.standard_normal(48000) * 1000).astype(np.int16), 48000, subtype="PCM_16")
        read_recording(p, cache=store)
        paths.append(p)
    found = entries(store)
    for age, entry in enumerate(sorted(found, key=lambda e: e.stat().st_mtime)):
        os.utime(entry, (1_000_000 + age, 1_000_000 + age))
    oldest = min(found, key=lambda e: e.stat().st_mtime)
    oldest_size = oldest.stat().st_size
    bounded = TraceCache(store.folder, max_bytes=store.size_bytes() - 1)
    assert bounded.prune() == oldest_size
    assert not oldest.exists() and len(entries(store)) == 2
    assert TraceCache(store.folder, max_bytes=0).prune() > 0 and entries(store) == []


def test_the_default_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPEECHCLOCK_CACHE", str(tmp_path / "moved"))
    assert default_folder() == tmp_path / "moved"
    assert resolve_cache(True).folder == tmp_path / "moved"
    monkeypatch.delenv("SPEECHCLOCK_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_folder() == tmp_path / "xdg" / "speechclock"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_folder() == tmp_path / "home" / ".cache" / "speechclock"
    assert resolve_cache(False) is None and resolve_cache(None) is None
    assert resolve_cache(tmp_path / "x").folder == tmp_path / "x"


def test_the_size_bound_is_read_from_the_environment(monkeypatch):
    from clock.errors import InvalidParameterError

    monkeypatch.setenv("SPEECHCLOCK_CACHE_MB", "1.5")
    assert resolve_cache(True).max_bytes == int(1.5 * 2**20)
    monkeypatch.setenv("SPEECHCLOCK_CACHE_MB", "lots")
    with pytest.raises(InvalidParameterError, match="SPEECHCLOCK_CACHE_MB"):
        resolve_cache(True)


def test_load_corpus_uses_the_cache_and_gives_the_same_corpus(tmp_path, decodes):
    folder = tmp_path / "cache"
    cold = load_corpus([REPO / "recordings"], cache=folder)
    n = len(decodes)
    warm = load_corpus([REPO / "recordings"], cache=folder)
    assert len(decodes) == n
    for a, b in zip(cold.recordings, warm.recordings):
        assert same(a, b)
    load_corpus([REPO / "recordings"], cache=False)
    assert len(decodes) == 2 * n


def test_cli_cache_options(cli, tmp_path, monkeypatch, short_recordings):
    rec = short_recordings
    plain = cli("derive", rec, "--no-cache")
    monkeypatch.setenv("SPEECHCLOCK_CACHE", str(tmp_path / "env"))
    first = cli("derive", rec)
    assert (tmp_path / "env" / "traces").is_dir()
    second = cli("derive", rec, "--cache", tmp_path / "given")
    third = cli("derive", rec, "--cache", tmp_path / "given")
    assert len(list((tmp_path / "given" / "traces").rglob("*.trace"))) == 2
    assert plain.stdout == first.stdout == second.stdout == third.stdout
    assert plain.stderr == first.stderr == second.stderr == third.stderr
    assert plain.exit_code == first.exit_code == third.exit_code == 0
    both = cli("derive", rec, "--cache", tmp_path / "x", "--no-cache")
    assert both.exit_code == 2 and "--no-cache" in both.stderr and not (tmp_path / "x").exists()


def test_a_url_is_keyed_by_its_stores_content_tag(store, monkeypatch):
    meta = {"size": 10, "type": "file", "ETag": '"abc"'}
    monkeypatch.setattr(cache_module, "url_info", lambda url: dict(meta))
    first = store._content("s3://bucket/a.webm")
    assert first == store._content("s3://bucket/a.webm") and first[1] is None
    meta["ETag"] = '"abd"'  # the object was replaced
    assert store._content("s3://bucket/a.webm") != first
    meta["size"] = 11
    changed_size = store._content("s3://bucket/a.webm")
    assert changed_size != first and store._content("s3://bucket/b.webm") != changed_size


def test_corpus_commands_take_the_scale_options(cli):
    for command in ("derive", "check", "sweep", "report", "stress"):
        text = cli(command, "--help").stdout
        assert "--scheduler" in text and "--cache DIR" in text and "--no-cache" in text and "--jobs" in text


# --- forged, swapped and bombed entries (bounded, never a wrong answer) -----------


def _forge(entry: Path, *, header_change=None, body: bytes | None = None, secret: bytes | None = None) -> None:
    """Rewrite an entry with a changed header or body and a recomputed checksum (what a forger can do).

    With ``secret`` the forger even holds the cache's key (the entry's own checks must still hold);
    without, the checksum is a plain SHA-256, as anyone who can write the folder can compute.
    """
    import hashlib
    import hmac
    import json
    import zlib

    data = entry.read_bytes()
    start = len(cache_module._MAGIC) + 8
    n_head = int.from_bytes(data[len(cache_module._MAGIC) : start], "little")
    header = json.loads(data[start : start + n_head])
    if header_change is not None:
        header_change(header)
    head = json.dumps(header, sort_keys=True).encode()
    packed = data[start + n_head : -32] if body is None else zlib.compress(body, 9)
    out = cache_module._MAGIC + len(head).to_bytes(8, "little") + head + packed
    mac = hashlib.sha256(out).digest() if secret is None else hmac.new(secret, out, hashlib.sha256).digest()
    entry.write_bytes(out + mac)


def _bomb(n_bytes: int) -> bytes:
    import zlib

    z = zlib.compressobj(9)
    block = bytes(1 << 20)
    return b"".join(z.compress(block) for _ in range(n_bytes >> 20)) + z.flush()


@pytest.mark.parametrize(
    "forgery",
    ["period 1/0", "period 0", "more ticks than the recording has", "frames out of order", "a swapped entry"],
)
def test_a_forged_entry_is_a_miss_with_one_warning_never_an_answer(wav, store, decodes, forgery, tmp_path):
    good = read_recording(wav, cache=store)
    (entry,) = entries(store)
    key = store._secret()
    if forgery == "period 1/0":
        _forge(entry, header_change=lambda h: h["traces"][0].update(period_s="1/0"), secret=key)
    elif forgery == "period 0":
        _forge(entry, header_change=lambda h: h["traces"][0].update(period_s="0"), secret=key)
    elif forgery == "more ticks than the recording has":
        _forge(entry, header_change=lambda h: h["traces"][0].update(n=10**9), secret=key)
    elif forgery == "frames out of order":
        t = good.trace
        body = t.frames[::-1].astype("<i8").tobytes() + t.level.astype("<f8").tobytes()
        _forge(entry, body=body, secret=key)
    else:  # another recording's valid entry, its key rewritten to this one's
        other = tmp_path / "other.wav"
        sf.write(str(other), np.zeros(48000, np.int16), 48000, subtype="PCM_16")
        read_recording(other, cache=store)
        (foreign,) = [e for e in entries(store) if e != entry]
        shutil.copy(foreign, entry)
    n = len(decodes)
    with pytest.warns(SpeechClockWarning, match=r"damaged cache entry for .*a\.wav .*recomputed") as caught:
        again = read_recording(wav, cache=store)
    assert len(caught) == 1 and str(entry) in str(caught[0].message)
    assert len(decodes) == n + 1 and same(again, good)


def test_a_zlib_bomb_is_refused_within_bounded_memory(wav, store, decodes):
    import tracemalloc

    good = read_recording(wav, cache=store)
    (entry,) = entries(store)
    _forge(entry, body=_bomb(256 << 20))  # 256 MiB of zeros behind a header that declares 60 ticks
    tracemalloc.start()
    try:
        with pytest.warns(SpeechClockWarning, match="damaged cache entry"):
            again = read_recording(wav, cache=store)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert same(again, good) and peak < 64 << 20


def test_a_damaged_or_deep_index_file_only_means_hashing_again(wav, store):
    good = read_recording(wav, cache=store)
    (index,) = sorted((store.folder / "files").rglob("*.json"))
    for junk in ("[" * 200_000, "{" + " " * (1 << 20) + "}", '{"content": 1}'):
        index.write_text(junk)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert same(read_recording(wav, cache=store), good)


def test_a_fifo_named_as_a_recording_is_never_hashed(store, tmp_path):
    from clock.errors import RecordingError

    fifo = tmp_path / "a.wav"
    os.mkfifo(fifo)
    with pytest.raises((OSError, RecordingError)):
        store._local_content(str(fifo))


def test_a_fifo_named_as_a_recording_is_refused_at_once_by_corpus_commands(tmp_path):
    import subprocess
    import sys

    fifo = tmp_path / "a.wav"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPEECHCLOCK_CACHE": str(tmp_path / "cache")}
    for command in (["derive", fifo], ["check", fifo, "--allow-defaults"]):
        result = subprocess.run(
            [sys.executable, "-m", "clock", *map(str, command)], capture_output=True, text=True, timeout=60, env=env
        )
        assert result.returncode == 2 and "FIFO" in result.stderr, result.stderr


@pytest.mark.parametrize("etag", ['W/"abc"', '"5f3c2a1b-1a2b"', '"2d-432a5e4a73a80"'])
def test_a_url_with_a_weak_or_mtime_etag_is_keyed_by_its_content(store, monkeypatch, etag):
    meta = {"size": 10, "type": "file", "ETag": etag}
    body = [b"first body"]
    monkeypatch.setattr(cache_module, "url_info", lambda url: dict(meta))

    class Reader:
        def __init__(self):
            self.data = [body[0]]

        def read(self, n):
            return self.data.pop() if self.data else b""

    from contextlib import contextmanager

    @contextmanager
    def opened(url):
        yield Reader()

    monkeypatch.setattr(cache_module, "open_binary", opened)
    first = store._content("https://example.com/a.webm")
    body[0] = b"other body"  # rewritten in place: same size, same ETag
    assert store._content("https://example.com/a.webm") != first


# --- a cache can change no verdict: authenticated index and entries ----------------


def _silenced(entry: Path) -> None:
    """Rewrite an entry's levels to silence, as a consistent entry with a recomputed SHA-256 (a forger's)."""
    import json
    import zlib

    data = entry.read_bytes()
    start = len(cache_module._MAGIC) + 8
    n_head = int.from_bytes(data[len(cache_module._MAGIC) : start], "little")
    header = json.loads(data[start : start + n_head])
    body = bytearray(zlib.decompress(data[start + n_head : -32]))
    at = 0
    for meta in header["traces"]:
        n = int(meta["n"])
        body[at + 8 * n : at + 16 * n] = np.full(n, -100.0, "<f8").tobytes()
        at += 16 * n
    _forge(entry, body=bytes(body))


def _index_records(store: TraceCache) -> dict[str, Path]:
    import json

    return {json.loads(p.read_text())["path"]: p for p in (store.folder / "files").rglob("*.json")}


def _swap_contents(a: Path, b: Path) -> None:
    """Swap the content hashes two index records give (the forgery of issue 24), nothing else."""
    import json

    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    ra["content"], rb["content"] = rb["content"], ra["content"]
    a.write_text(json.dumps(ra))
    b.write_text(json.dumps(rb))


def test_a_consistent_forged_entry_is_refused_and_recomputed(wav, store, decodes):
    good = read_recording(wav, cache=store)
    (entry,) = entries(store)
    _silenced(entry)
    n = len(decodes)
    with pytest.warns(SpeechClockWarning, match=r"damaged cache entry for .*a\.wav .*not authenticated"):
        again = read_recording(wav, cache=store)
    assert len(decodes) == n + 1 and same(again, good)


def test_a_forged_index_is_never_believed(store, tmp_path, rng, monkeypatch):
    monkeypatch.setattr(cache_module, "RACY_S", 0.0)  # the index is trusted as much as it ever is
    paths = []
    for name, scale in (("a.wav", 3000), ("b.wav", 30)):
        path = tmp_path / name
        sf.write(str(path), (rng.standard_normal(24000) * scale).astype(np.int16), 48000, subtype="PCM_16")
        paths.append(path)
    plain = [read_recording(p) for p in paths]
    for p in paths:
        read_recording(p, cache=store)
    records = _index_records(store)
    _swap_contents(*(records[os.path.realpath(p)] for p in paths))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = [read_recording(p, cache=store) for p in paths]
    assert all(same(x, y) for x, y in zip(again, plain, strict=True))


def test_a_cache_made_under_another_key_is_cold_not_believed(wav, store, decodes, tmp_path):
    read_recording(wav, cache=store)
    elsewhere = TraceCache(store.folder, key_file=tmp_path / "other-machine" / "key")
    n = len(decodes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = read_recording(wav, cache=elsewhere)
        read_recording(wav, cache=elsewhere)
    assert len(decodes) == n + 1 and same(again, read_recording(wav))


def test_the_key_is_made_private_outside_the_cache_and_refused_inside_it(wav, tmp_path):
    import stat

    store = TraceCache(tmp_path / "cache", key_file=tmp_path / "config" / "key")
    read_recording(wav, cache=store)
    mode = os.stat(tmp_path / "config" / "key").st_mode
    assert stat.S_IMODE(mode) == 0o600 and (tmp_path / "config" / "key").stat().st_size == 32
    inside = TraceCache(tmp_path / "cache2", key_file=tmp_path / "cache2" / "key")
    cache_module._warn_once.cache_clear()
    with pytest.warns(SpeechClockWarning, match="inside the cache folder.*continuing without the cache"):
        assert not inside.writable()
    cache_module._warn_once.cache_clear()
    with pytest.warns(SpeechClockWarning, match="inside the cache folder"):
        rec = read_recording(wav, cache=inside)
    assert same(rec, read_recording(wav)) and not (tmp_path / "cache2" / "traces").exists()


@pytest.mark.parametrize("forgery", ["index", "trace"])
@pytest.mark.parametrize("command", ["derive", "check", "sweep"])
def test_a_forged_cache_gives_the_bytes_of_no_cache(cli, tmp_path, short_recordings, monkeypatch, command, forgery):
    monkeypatch.setattr(cache_module, "RACY_S", 0.0)
    rec = tmp_path / "rec"
    shutil.copytree(short_recordings, rec)
    folder = tmp_path / "cache"
    plain = cli(command, rec, "--no-cache")
    cli(command, rec, "--cache", folder)  # fills the cache
    store = TraceCache(folder)
    if forgery == "index":
        records = _index_records(store)
        a, b = (
            records[os.path.realpath(rec / f"{name}{ext}")]
            for name, ext in (("short-en-029-44k", ".wav"), ("tour-en-us-48k", ".webm"))
        )
        _swap_contents(a, b)
    else:
        for entry in entries(store):
            _silenced(entry)
    forged = cli(command, rec, "--cache", folder)
    assert forged.exit_code == plain.exit_code and forged.stdout == plain.stdout
    if forgery == "trace":
        assert forged.stderr.count("not authenticated") == 2
    again = cli(command, rec, "--cache", folder)  # and the entries rewritten are good
    assert again.stdout == plain.stdout and again.stderr == plain.stderr
