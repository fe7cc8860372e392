"""One tally, every view: at one setting on one corpus, derive's replay, the sweep, the level rule and compare's
level clock count the same beats the same way.

Each view holds a :class:`clock.core.tally.Tally` of every beat of the logs; ``n_beats`` is the beats the clock
heard (a tick in their life), ``unheard`` the others. Compare judges its level clock against a reference (the
labels, else a two-mode split of the level), not against the clock's own speech: where the reference and the
clock's floor hear the same speech, as in the construction here, its outcomes are the clock's.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from clock.core.analysis import analyse
from clock.core.compare import tune
from clock.core.events import Event, EventLog
from clock.core.levels import LevelTrace
from clock.core.model import Margins, Observation
from clock.core.outcome import OUTCOMES, SILENT, UNHEARD
from clock.core.recommend.engine import derive
from clock.core.recommend.replay import judge
from clock.core.recommend.rules import Rule, replay_rule
from clock.core.reference import prepare
from clock.core.sweep import sweep
from clock.core.tally import Tally
from clock.core.thresholds import LEVEL
from clock.core.ticks import Ticks

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
PERIOD = Fraction(1, 60)


def _views(observations: list[Observation], floor: float, quiet_s: float, timeout_s: float) -> dict[str, Tally]:
    """Every view's tally of one setting over the observations."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # events outside a recording, thin evidence
        derivation = derive(observations)
        outcome = judge(observations, floor=floor, quiet_s=quiet_s, onset_timeout_s=timeout_s)
        point = sweep(
            observations, floors=[floor], quiets_s=[quiet_s], onset_timeout_s=timeout_s, derivation=derivation
        )
        recs = []
        for o in observations:
            a = analyse(o.trace, o.events, floor=floor)  # type: ignore[arg-type]
            recs.append((o.name, a, [None] * len(a.beats)))
        rule = replay_rule(recs, Rule(LEVEL, quiet_s), onset_timeout_s=timeout_s)
        level = tune(
            [prepare(o) for o in observations], None, name="level", kind="floor", thresholds=[floor],
            onset_timeout_s=timeout_s, margins=Margins(), quiets_s=[quiet_s],
        )  # fmt: skip
    return {"derive": outcome.tally, "sweep": point.points[0].tally, "rule": rule.tally, "compare": level.tally}


def _by_outcome(t: Tally) -> dict[str, int]:
    return {kind: t[kind] for kind in OUTCOMES}


def _constructed() -> tuple[list[Observation], dict[str, int]]:
    """A recording whose beats end each way at floor 0.003, quiet 1 s, onset timeout 4 s, by construction."""
    n = 15 * 60
    t = np.arange(n) / 60
    level = np.full(n, 1e-4)  # room noise under the floor
    for lo, hi in ((1.0, 3.0), (9.5, 10.5), (10.8, 11.5)):
        level[(t >= lo) & (t < hi)] = 0.05
    ticks = Ticks(PERIOD)
    trace = LevelTrace(ticks.frames(np.arange(n), 48000), level, 48000, ticks)
    # 0.5 s: spoken, then a quiet of 3 s: ok. 6.005 s: superseded by 6.006 s before a tick: unheard. 6.006 s: no
    # speech before the next terminal: silent. 9.0 s: spoken, a 0.3 s dip (bridged), then quiet: ok.
    times = (0.5, 6.005, 6.006, 9.0)
    log = EventLog(tuple(Event("terminal", "terminal", x, i + 1, 1.0) for i, x in enumerate(times)))
    expected = dict.fromkeys(OUTCOMES, 0) | {"ok": 2, SILENT: 1, UNHEARD: 1}
    return [Observation("made.wav", trace, log)], expected


def test_every_view_counts_a_constructed_recording_as_built():
    observations, expected = _constructed()
    views = _views(observations, 0.003, 1.0, 4.0)
    for name, tally in views.items():
        assert _by_outcome(tally) == expected, name
        assert tally.n_beats == 3 and tally.n_failed == 0, name


@pytest.mark.skipif(not (RECORDINGS / "speechclock.toml").exists(), reason="no bundled recordings")
def test_every_view_counts_the_bundled_recordings_alike_at_the_recommendation():
    from clock.run.corpus import collect, observe

    cfg, files = collect([RECORDINGS])
    observations = [observe(f, cfg)[1] for f in files]
    views = _views(observations, 0.0032, 2.5, 4.0)
    counts = {name: _by_outcome(t) for name, t in views.items()}
    assert counts["derive"] == counts["sweep"] == counts["rule"] == counts["compare"]
    assert {t.n_beats for t in views.values()} == {19} and {t.n_failed for t in views.values()} == {0}


def test_a_tally_counts_each_kind_once_and_a_record_spells_it_out_in_the_views_order():
    from dataclasses import fields

    from clock.core.recommend.evidence import CorpusOutcome
    from clock.core.tally import NO_EVENT, UNHEARD_SPEECH, field_name, record

    outcomes = ["ok", "ok", "premature", "silent", "unheard", "outpaced", UNHEARD_SPEECH]
    t = Tally.of(outcomes, extra=(UNHEARD_SPEECH,))
    assert (t.n_ok, t.n_premature, t.n_silent, t.n_unheard, t.n_outpaced, t.n_speech_unheard) == (2, 1, 1, 1, 1, 1)
    assert t.n_no_event == 0 and t[NO_EVENT] == 0  # a kind this tally does not count
    assert t.n_beats == len(outcomes) - 1  # all but the unheard
    assert t.n_failed == 2  # the premature end and the unheard speech; outpaced is no failure
    assert t + t == Tally.of(outcomes * 2, extra=(UNHEARD_SPEECH,))
    o = CorpusOutcome(n_recordings=1, tally=t, unsatisfied=(), narration_pause_s=0.5)
    row = record(o)
    assert tuple(row) == CorpusOutcome.RECORD
    own = {f.name for f in fields(CorpusOutcome)} - {"tally"}
    for key, value in row.items():
        assert value == (getattr(o, key) if key in own else getattr(t, key)), key
    assert all(key in own or key.startswith("n_") for key in row)
    assert {field_name(k) for k in t.kinds} >= {key for key in row if key not in own and key != "n_beats"}
