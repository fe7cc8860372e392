"""speechclock.js decides as the replay does, tick for tick, in headless Chromium.

The page clock (clock/web/speechclock.js, also docs/speechclock.js) runs in an
OfflineAudioContext over the bundled recordings and over constructed and random
tours (pauses while speaking and waiting, an acknowledgment over the terminal
response, aborted beats, silent beats, events exactly on a tick), suspended at
every tick of the trace. Its level, its state at every tick and every beat's
decisions must equal :func:`clock.core.beats.replay_ticks`; a failure names the
first tick where they part.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import run_page
from page_clock import bundled_cases, constructed_tour, first_parting, offline_page, random_tours

from clock.web import script

ROOT = Path(__file__).resolve().parent.parent


def test_docs_copy_is_the_shipped_script():
    assert (ROOT / "docs" / "speechclock.js").read_text(encoding="utf-8") == script()


def test_page_clock_decides_as_the_replay_tick_for_tick(chromium):
    cases = bundled_cases() + [constructed_tour(s) for s in range(3)] + random_tours(5) + random_tours(6)
    html, files = offline_page(cases)
    results = json.loads(run_page(html, timeout_s=300, files=files)["/done"])
    assert len(results) == len(cases)
    partings = [p for p in (first_parting(c, r) for c, r in zip(cases, results)) if p]
    assert not partings, "\n".join(partings)
    # The cases reach every path of the clock.
    outcomes = [b for r in results for b in r["beats"]]
    assert any(b["aborted"] for b in outcomes) and any(b["no_onset"] for b in outcomes)
    assert sum(b["quiet_declared_s"] is not None for b in outcomes) >= 10
