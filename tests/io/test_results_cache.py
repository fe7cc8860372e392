"""``derive`` with a cache reads back a derivation of unchanged inputs, and derives afresh when any changes."""

from __future__ import annotations

import importlib
import json

import pytest
from conftest import copy_short_recordings

derive_cli = importlib.import_module("clock.cli.derive")  # the module (clock.cli.derive is also the command)


@pytest.fixture
def counted(monkeypatch):
    """The number of derivations actually computed."""
    calls = []
    real = derive_cli.derive_thresholds

    def counting(*args, **kwargs):
        calls.append(kwargs.get("group"))
        return real(*args, **kwargs)

    monkeypatch.setattr(derive_cli, "derive_thresholds", counting)
    return calls


def _entries(cache):
    return sorted((cache / "results").rglob("*.pickle")) if (cache / "results").exists() else []


def test_a_cached_derive_reads_the_derivation_back_with_the_same_output(cli, tmp_path, counted):
    folder = copy_short_recordings(tmp_path / "r")
    cache = tmp_path / "cache"
    cold = cli("derive", folder, "--no-cache")
    first = cli("derive", folder, "--cache", cache)
    assert counted == ["all", "all"] and len(_entries(cache)) == 1
    again = cli("derive", folder, "--cache", cache)
    assert counted == ["all", "all"]  # read back, not derived
    for result in (first, again):
        assert (result.exit_code, result.stdout, result.stderr) == (cold.exit_code, cold.stdout, cold.stderr)
    as_json = cli("derive", folder, "--cache", cache, "--format", "json")
    assert counted == ["all", "all"] and json.loads(as_json.stdout)["groups"][0]["group"] == "all"


def test_any_change_to_the_inputs_derives_afresh(cli, tmp_path, counted):
    folder = copy_short_recordings(tmp_path / "r")
    cache = tmp_path / "cache"
    cli("derive", folder, "--cache", cache)
    log = next(folder.glob("*.events.jsonl"))
    lines = log.read_text().splitlines()
    terminal = next(i for i, line in enumerate(lines) if "terminal_response" in line or "response.done" in line)
    del lines[terminal]
    log.write_text("\n".join(lines) + "\n")
    changed = cli("derive", folder, "--cache", cache)
    assert counted == ["all", "all"] and len(_entries(cache)) == 2
    assert changed.stdout == cli("derive", folder, "--no-cache").stdout
    # Other margins (a config change) are another key too.
    config = folder / "speechclock.toml"
    config.write_text(config.read_text().replace("quiet_margin_s = 0.2", "quiet_margin_s = 0.3"))
    cli("derive", folder, "--cache", cache)
    assert len(counted) == 4 and len(_entries(cache)) == 3


def test_no_cache_keeps_nothing_and_a_damaged_entry_is_derived_again(cli, tmp_path, counted):
    folder = copy_short_recordings(tmp_path / "r")
    cache = tmp_path / "cache"
    cli("derive", folder, "--no-cache")
    assert not _entries(cache)
    good = cli("derive", folder, "--cache", cache)
    (entry,) = _entries(cache)
    entry.write_bytes(b"not a pickle")
    damaged = cli("derive", folder, "--cache", cache)
    assert damaged.stdout == good.stdout and damaged.stderr == good.stderr and len(counted) == 3
    assert entry.read_bytes() != b"not a pickle"  # replaced


def test_warnings_of_the_derivation_are_shown_again_on_a_hit(cli, tmp_path, counted, monkeypatch):
    import warnings

    from clock.errors import SpeechClockWarning

    real = derive_cli.derive_thresholds

    def warning(*args, **kwargs):
        warnings.warn("a warning the derivation gave", SpeechClockWarning, stacklevel=2)
        return real(*args, **kwargs)

    monkeypatch.setattr(derive_cli, "derive_thresholds", warning)
    folder = copy_short_recordings(tmp_path / "r")
    cache = tmp_path / "cache"
    first = cli("derive", folder, "--cache", cache)
    again = cli("derive", folder, "--cache", cache)
    assert "a warning the derivation gave" in first.stderr
    assert again.stderr == first.stderr and again.stdout == first.stdout


def test_a_forged_entry_is_never_read_back(cli, tmp_path, counted, monkeypatch):
    """An entry another key signed (a cache restored from another machine), or a pickle written in its place with
    any content, is derived afresh: a results cache can change no verdict."""
    import pickle

    folder = copy_short_recordings(tmp_path / "r")
    cache = tmp_path / "cache"
    good = cli("derive", folder, "--cache", cache)
    (entry,) = _entries(cache)
    value, shown = pickle.loads(entry.read_bytes()[32:])
    # A forger who knows the format but not the key: the same layout, a digest of their own.
    forged = pickle.dumps((value, [("forged warning", UserWarning, "x.py", 1)]))
    entry.write_bytes(b"\0" * 32 + forged)
    again = cli("derive", folder, "--cache", cache)
    assert (again.stdout, again.stderr) == (good.stdout, good.stderr) and len(counted) == 2
    # An entry signed with another machine's key is not read either.
    other = tmp_path / "other-key"
    other.write_bytes(b"k" * 32)
    monkeypatch.setenv("SPEECHCLOCK_CACHE_KEY", str(other))
    elsewhere = cli("derive", folder, "--cache", cache)
    assert elsewhere.stdout == good.stdout and len(counted) == 3


def test_a_result_whose_inputs_changed_while_it_was_computed_is_not_kept(tmp_path):
    from clock.run.cache import resolve_cache
    from clock.run.results import cached_result

    cache = resolve_cache(tmp_path / "cache")
    calls = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    # ``keep`` says the recording changed while it was read: nothing kept, the next run computes again.
    assert cached_result(cache, "kind", [], compute, keep=lambda: False, x=1) == 1
    assert not _entries(tmp_path / "cache")
    assert cached_result(cache, "kind", [], compute, keep=lambda: True, x=1) == 2
    assert cached_result(cache, "kind", [], compute, keep=lambda: True, x=1) == 2 and len(calls) == 2
