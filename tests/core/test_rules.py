"""Dead air and the rules that end a beat sooner, held to constructed tours (tests/sessions.py).

Each tour's provider says ``output_audio_buffer.stopped`` from 0.5 s before its last word reaches the
analyser to 1 s after it, or (in some corpora) not at all. The construction knows when each last word
ends and when the event came; the tests judge the rules' declarations by that, not by the tool's replay.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sessions import RATE, ProviderBeat, Session, provider_tour

from clock.core.analysis import analyse
from clock.core.decide import decide_quiets, judge_declared
from clock.core.events import Event, EventLog
from clock.core.levels import levels
from clock.core.model import Observation
from clock.core.outcome import OUTCOMES
from clock.core.provider import provider_stopped
from clock.core.recommend.engine import derive
from clock.core.recommend.rules import Rule, replay_rule
from clock.core.tally import NO_EVENT
from clock.core.thresholds import LEVEL, LEVEL_AFTER_STOPPED, STOPPED, STOPPED_QUIET
from clock.web import PAGE_KEYS, RULE_KEYS

TICK = 1 / 60
RMS = 0.05  # the constructed voice (a square wave)


def enter_s(floor: float) -> float:
    """How long the voice must be in the analyser's window to read above ``floor``: the RMS of a window
    holding a fraction f of a square wave at RMS is RMS * sqrt(f)."""
    return (int(2048 * (floor / RMS) ** 2) + 1) / RATE


def observation(name: str, s: Session) -> Observation:
    return Observation(name, levels(s.samples(), RATE), s.log())


def corpus(seed: int, n: int = 4, **kw) -> tuple[list[Observation], list[list[ProviderBeat]]]:
    obs, truths = [], []
    for i in range(n):
        s, truth = provider_tour(seed * 100 + i, **kw)
        obs.append(observation(f"tour{i}", s))
        truths.append(truth)
    return obs, truths


def declared_right(declared_s: float | None, b: ProviderBeat, floor: float) -> bool:
    """By construction: after the analyser stopped hearing the last word (at this floor), before the bound."""
    return declared_s is not None and b.heard_s - enter_s(floor) - TICK <= declared_s < b.bound_s


@pytest.fixture(scope="module", params=[3, 11])
def full(request):
    """Every beat has the provider's event."""
    obs, truths = corpus(request.param)
    return obs, truths, derive(obs)


def test_the_recommended_rule_ends_every_constructed_beat_right_and_costs_the_constructed_dead_air(full):
    obs, truths, d = full
    ev = d.rules
    assert ev is not None and ev.recommended is not None
    saving = ev.saving
    assert saving is not None and saving.tally.n_failed == 0 and saving.margin_kept
    assert saving.tally.n_beats == ev.level.tally.n_beats == sum(len(t) for t in truths)
    h = saving.rule.hangover_s
    assert h is not None and h < ev.quiet_s
    by_name = {o.name: truth for o, truth in zip(obs, truths)}
    ticks_of = {o.name: o.trace.t_s for o in obs}  # the clock's schedule: a tick every 1/60 s
    for c in saving.beats:
        b = by_name[c.recording][c.index]
        assert declared_right(c.declared_s, b, d.setting[0]), (c, b)
        # By construction: the rule declares at the clock's first tick once the event has come and the
        # hangover has passed since the analyser stopped hearing the last word (the quiet time, at most: the
        # level clock bounds every rule).
        wait = min(max(b.stopped_s, b.heard_s + h), b.heard_s + ev.quiet_s)
        ticks = ticks_of[c.recording]
        expected = float(ticks[np.searchsorted(ticks, wait - 1e-9)]) - b.heard_s
        assert c.dead_air_s is not None
        assert abs(c.dead_air_s - expected) <= TICK + enter_s(d.setting[0]), (c, b, expected)
    assert saving.dead_air.median_s < ev.level.dead_air.median_s
    assert ev.held_out is not None and ev.held_out.n_right == ev.held_out.n_recordings == len(obs)


def test_the_level_clock_costs_its_quiet_time_after_every_last_word(full):
    obs, truths, d = full
    level = d.rules.level
    assert level.tally.n_failed == 0
    for c in level.beats:
        # The clock declares the first tick the quiet since the last word it heard reaches the quiet time.
        assert d.gaps.quiet_s - 1e-9 <= c.dead_air_s < d.gaps.quiet_s + TICK + 1e-9
    per_tour = {t.recording: t for t in level.dead_air.tours}
    for o, truth in zip(obs, truths):
        assert per_tour[o.name].n_beats == len(truth)
        assert per_tour[o.name].total_s == pytest.approx(
            sum(c.dead_air_s for c in level.beats if c.recording == o.name)
        )


def test_an_early_event_alone_ends_the_beat_while_the_guide_still_speaks(full):
    obs, truths, d = full
    alone = d.rules.result(STOPPED)
    by_name = {o.name: truth for o, truth in zip(obs, truths)}
    n_early = 0
    for c in alone.beats:
        b = by_name[c.recording][c.index]
        if b.stopped_s < b.heard_s - enter_s(d.setting[0]) - 2 * TICK:
            n_early += 1
            assert c.outcome == "premature", (c, b)
        elif b.stopped_s >= b.heard_s:
            assert c.outcome == "ok" and declared_right(c.declared_s, b, d.setting[0])
    assert n_early and alone.tally.n_premature >= n_early
    assert d.rules.recommended != STOPPED


def test_a_rule_that_needs_the_event_fails_a_beat_without_it():
    obs, truths = corpus(5, missing=0.3)
    n_missing = sum(b.stopped_s is None for truth in truths for b in truth)
    assert n_missing
    d = derive(obs, held_out=False)
    ev = d.rules
    assert ev.n_with_event == ev.n_beats_with_speech - n_missing
    for kind in (STOPPED_QUIET, STOPPED):
        r = ev.result(kind)
        assert r.tally.n_no_event == n_missing and r.tally.n_failed >= n_missing
        assert all((c.outcome == NO_EVENT) == (c.stopped_s is None) for c in r.beats)
        # The page still ends such a beat, by the level clock; the rule decided nothing there, so it earns no dead air.
        for c, lv in zip(r.beats, ev.level.beats):
            if c.stopped_s is None:
                assert c.declared_s == lv.declared_s is not None and c.dead_air_s is None, (c, lv)
    # Without the event the hybrid is the level clock; its evidence rests on fewer beats, so it is not recommended.
    hybrid, level = ev.result(LEVEL_AFTER_STOPPED), ev.level
    for h, lv in zip(hybrid.beats, level.beats):
        if h.stopped_s is None:
            assert (h.outcome, h.declared_s) == (lv.outcome, lv.declared_s)
    assert hybrid.n_evidence < level.n_evidence and ev.recommended is None
    assert "fewer than" in ev.reason


def test_every_rule_is_judged_by_the_one_judge():
    obs, _ = corpus(7, n=2)
    for o in obs:
        a = analyse(o.trace, o.events, floor=0.003)
        stopped = provider_stopped(o.events, a)
        found = decide_quiets(a, quiets_s=[0.3, 1.0, 2.5], onset_timeout_s=10.0)
        for i, b in enumerate(a.beats):
            for j in range(3):
                d = int(found.declared_tick[i, j])
                pause = a.narration_pause_s
                judged = judge_declared(b, None if d < 0 else d, onset_timeout_s=10.0, narration_pause_s=pause)
                assert judged == OUTCOMES[found.outcome[i, j]]
        level = replay_rule([(o.name, a, stopped)], Rule(LEVEL, 2.5), onset_timeout_s=10.0)
        assert [c.outcome for c in level.beats] == [OUTCOMES[x] for x in found.outcome[:, 2]]
        # The hybrid with a hangover as long as the quiet time is the level clock.
        same = replay_rule([(o.name, a, stopped)], Rule(LEVEL_AFTER_STOPPED, 2.5, 2.5), onset_timeout_s=10.0)
        assert [(c.outcome, c.declared_s) for c in same.beats] == [(c.outcome, c.declared_s) for c in level.beats]


# --- the views ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Constructed tours written as the page's capture writes them, every beat with the provider's event."""
    out = tmp_path_factory.mktemp("provider")
    truths = []
    for i in range(4):
        s, truth = provider_tour(300 + i)
        s.write(out, f"tour{i}")
        truths.append(truth)
    return out, truths


def test_derive_names_the_saving_in_text_json_and_js_alike(cli, folder):
    path, truths = folder
    text = cli("derive", path, "--no-progress").stdout
    data = json.loads(cli("derive", path, "--format", "json", "--no-progress").stdout)["groups"][0]
    ev = data["rules"]
    assert [r["rule"]["kind"] for r in ev["results"]] == [LEVEL, STOPPED_QUIET, STOPPED, LEVEL_AFTER_STOPPED]
    saving = next(r for r in ev["results"] if r["rule"]["kind"] == ev["recommended"])
    level = ev["results"][0]
    assert saving["n_failed"] == 0 and saving["n_beats"] == level["n_beats"] == sum(len(t) for t in truths)
    line = (
        f"less dead air: {saving['rule']['label']}: 0 failures, dead air median {saving['dead_air']['median_s']:.2f} s "
        f"against {level['dead_air']['median_s']:.2f} s of the level clock; derived without each recording in turn: "
        f"{ev['held_out']['n_right']} of {ev['held_out']['n_recordings']} recordings replay right; "
        f"{ev['committed_saving_s']:.2f} s less at the committed setting"
    )
    assert line in text.splitlines()
    # Named only where it holds: every recording left out replays right, and it saves min_saving_s at both settings.
    assert ev["held_out"]["n_right"] == ev["held_out"]["n_recordings"]
    assert ev["committed_saving_s"] >= ev["min_saving_s"] == 0.3
    assert level["dead_air"]["median_s"] - saving["dead_air"]["median_s"] >= 0.3
    for r in ev["results"]:
        row = next(x for x in text.splitlines() if x.strip().startswith(r["rule"]["label"] + "  "))
        fields = ("n_beats", "n_failed", "n_premature", "n_stalled", "n_outpaced", "n_missed_onset", "n_no_event")
        assert row.split()[-9:-2] == [str(r[k]) for k in fields]
    js = cli("derive", path, "--format", "js", "--no-progress").stdout
    config = json.loads(js.split("const SPEECHCLOCK_CONFIG = ", 1)[1].rstrip().rstrip(";"))
    assert tuple(config) == PAGE_KEYS + RULE_KEYS
    assert config["rule"] == ev["recommended"] and config["hangover_s"] == saving["rule"]["hangover_s"]
    assert config["quiet_s"] == data["recommended"]["quiet_s"]


def test_beats_replays_the_rule_it_is_given_as_the_construction_says(cli, folder, tmp_path):
    # `beats --rule stopped+quiet --hangover H` declares each beat at the first tick once the provider's event has
    # come and H has passed since the analyser stopped hearing the last word; by default it replays the level clock,
    # and says so when the log says the page ran another rule.
    path, truths = folder
    floor, hangover = 0.003, 0.4
    args = ("beats", path / "tour0.wav", "--floor", floor, "--quiet-time", 2.5, "--format", "json")
    data = json.loads(cli(*args, "--rule", STOPPED_QUIET, "--hangover", hangover).stdout)
    assert data["params"]["rule"] == STOPPED_QUIET and data["params"]["hangover_s"] == hangover
    found = data["beats"]
    assert len(found) == len(truths[0])
    for got, b in zip(found, truths[0]):
        assert got["outcome"] == "ok" and declared_right(got["quiet_declared_s"], b, floor)
        expected = min(max(b.stopped_s, b.heard_s + hangover), b.heard_s + 2.5)
        assert abs(got["quiet_declared_s"] - expected) <= TICK + enter_s(floor), (got, b)  # (as derive's replay)
    level = json.loads(cli(*args).stdout)
    assert level["params"]["rule"] == LEVEL
    for g, b in zip(level["beats"], truths[0]):
        assert abs(g["quiet_declared_s"] - (b.heard_s + 2.5)) <= TICK + enter_s(floor)
    # The page's logged setting names a rule: the level replay says which one it is not.
    (tmp_path / "tour0.wav").write_bytes((path / "tour0.wav").read_bytes())
    setting = {"type": "clock.setting", "t": 0.0, "floor": floor, "quiet_s": 2.5, "onset_timeout_s": 10,
               "tick_s": "1/60", "fft_size": 2048, "rule": STOPPED_QUIET, "hangover_s": hangover}  # fmt: skip
    log = (path / "tour0.events.jsonl").read_text()
    (tmp_path / "tour0.events.jsonl").write_text(json.dumps(setting) + "\n" + log)
    text = cli("beats", tmp_path / "tour0.wav", "--floor", floor, "--quiet-time", 2.5, "--rule", LEVEL).stdout
    assert (
        f"the log says the page ran stopped + {hangover:g} s quiet; this replay runs level clock, quiet 2.5 s "
        f"(give --rule {STOPPED_QUIET} --hangover {hangover:g})"
    ) in text.splitlines()
    # Without --rule, beats replays the rule the log says the page ran, as check does.
    as_page = json.loads(cli("beats", tmp_path / "tour0.wav", "--format", "json").stdout)["params"]
    assert (as_page["rule"], as_page["hangover_s"]) == (STOPPED_QUIET, hangover)
    # The page ends the first beat 1.5 s after its last word: past every narration pause (at most 1.2 s), before a
    # 2 s hangover: outpaced, and the line under the table says the rule it ran.
    end = {"type": "end", "t": truths[0][0].end_s + 1.5}
    (tmp_path / "tour0.events.jsonl").write_text(log + json.dumps(end) + "\n")
    args = ("beats", tmp_path / "tour0.wav", "--floor", floor, "--quiet-time", 2.5)
    lines = cli(*args, "--rule", STOPPED_QUIET, "--hangover", 2).stdout.splitlines()
    (line,) = [x for x in lines if x.startswith("beat 1 outpaced: ")]
    assert "after the last word, before the rule (stopped + 2 s quiet) ended it; the guide had finished" in line
    bad = cli("beats", path / "tour0.wav", "--rule", STOPPED_QUIET)
    assert bad.exit_code == 2 and "'--hangover'" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_dead_air_check_holds_every_beat_to_the_committed_maximum(cli, folder, tmp_path):
    path, truths = folder
    n_beats = [len(t) for t in truths]
    (tmp_path / "speechclock.toml").write_text("[thresholds]\nquiet_s = 1.5\nmax_dead_air_s = 1.45\n")
    for p in path.iterdir():
        (tmp_path / p.name).write_bytes(p.read_bytes())
    done = cli("check", tmp_path, "--no-progress", "--format", "json")
    found = json.loads(done.stdout)
    dead = [r for r in found["results"] if r["check"] == "dead-air"]
    # The level clock waits its quiet time (1.5 s) after every last word: each beat fails, one line each.
    assert len(dead) == sum(n_beats) and not any(r["passed"] for r in dead)
    assert all(r["measured"] >= 1.5 - 1e-9 and r["threshold"] == 1.45 for r in dead)
    assert done.exit_code == 1 and found["counts"]["checks"] == found["counts"]["recordings"] * 14
    (tmp_path / "speechclock.toml").write_text("[thresholds]\nquiet_s = 1.5\nmax_dead_air_s = 1.6\n")
    text = cli("check", tmp_path, "--no-progress").stdout
    assert "dead-air" not in text
    # A tick's time is its frame over the rate (768 or 896 frames at 48 kHz): the wait is the quiet time, up to a tick.
    median_s = float(re.match(r"dead air at this setting: median (\S+) s", text.splitlines()[-2]).group(1))
    assert 1.5 <= median_s <= 1.5 + 896 / 48000 + 0.005
    (tmp_path / "speechclock.toml").write_text("[thresholds]\nmax_dead_air_s = -1\n")
    bad = cli("check", tmp_path, "--no-progress")
    assert bad.exit_code == 2 and "thresholds.max_dead_air_s" in bad.stderr


def test_the_report_shows_the_dead_air_the_rules_and_their_figure(cli, folder, tmp_path, monkeypatch):
    import clock.report.html
    import clock.report.plot

    # The rules' figure is rendered; the report's other figures (not this test's subject, most of its time) are
    # drawn but not rendered to PNG.
    drawn, plot_rules, png_data_uri = [], clock.report.plot.plot_rules, clock.report.html.png_data_uri
    monkeypatch.setattr(
        clock.report.plot, "plot_rules", lambda *a, **kw: drawn.append(plot_rules(*a, **kw)) or drawn[-1]
    )
    monkeypatch.setattr(clock.report.html, "png_data_uri", lambda fig: png_data_uri(fig) if fig in drawn else "-")
    path, _ = folder
    out = tmp_path / "report.html"
    cli("report", path, "--allow-defaults", "--no-progress", "-o", out)
    page = out.read_text(encoding="utf-8")
    section = page[page.index('<section id="deadair">') : page.index("</section>", page.index('id="deadair"'))]
    text = cli("derive", path, "--no-progress").stdout
    saving = next(x for x in text.splitlines() if x.startswith("less dead air: "))
    assert f"<li>{saving}</li>" in section
    assert "<h3>Per tour</h3>" in section and 'alt="rules" src="data:image/png;base64,' in section
    for label in ("level clock, quiet", "stopped + ", "stopped alone", " once stopped"):
        assert label in section


# --- random tours of a word-like voice (tests/tours.py) ---------------------------------------------


def with_provider(tour, rng, *, missing: float = 0.0):
    """The tour's log with the provider's ``stopped`` for each beat with a narration, from 0.5 s before its last
    word ends to 1 s after (or, with chance ``missing``, none); returns the times, None where missing."""
    times = []
    for truth in tour.beats:
        if truth.silent or truth.aborted or rng.random() < missing:
            times.append(None)
            continue
        times.append(truth.narration_end_s + float(rng.uniform(-0.5, 1.0)))
    extra = [{"type": "output_audio_buffer.stopped", "t": t} for t in times if t is not None]
    tour.events = sorted(tour.events + extra, key=lambda e: e["t"])
    return times


@pytest.mark.parametrize("seed", [2, 8])
def test_on_random_tours_the_recommended_rule_ends_every_beat_right_by_construction(seed):
    from tours import random_tour

    rng = np.random.default_rng(seed)
    tours, stopped = [], []
    for i in range(4):
        level = float(10 ** rng.uniform(np.log10(0.03), np.log10(0.2)))
        tour = random_tour(rng, f"tour{i}", level=level, room=str(rng.choice(["zero", "comfort"])), log="full")
        stopped.append(with_provider(tour, rng))
        tours.append(tour)
    d = derive([t.observation() for t in tours])
    ev = d.rules
    assert ev is not None and ev.n_with_event == ev.n_beats_with_speech
    truths = {f"{t.name}.wav": t.beats for t in tours}
    events = {f"{t.name}.wav": s for t, s in zip(tours, stopped)}
    # The event alone, well before the last word's end: the guide still speaks after it.
    for c in ev.result(STOPPED).beats:
        at = events[c.recording][c.index]
        if at is not None and at < truths[c.recording][c.index].narration_end_s - 0.3:
            assert c.outcome == "premature", c
    saving = ev.saving
    if saving is None:  # the level clock stays; its reason says which rule failed or saved nothing
        assert ev.reason
        return
    assert saving.tally.n_failed == 0 and saving.dead_air.median_s < ev.level.dead_air.median_s
    for c in saving.beats:
        truth = truths[c.recording][c.index]
        # By construction: declared after the guide's last word ended and before the beat's bound.
        assert c.declared_s is not None and truth.narration_end_s < c.declared_s < truth.bound_s, (c, truth)


# --- the page's replay: each rule tick by tick ------------------------------------------------------


def with_stops(rng: np.random.Generator, trace, log: EventLog, kind: str = "output_audio_buffer.stopped") -> EventLog:
    """The log with the provider's events: after some terminal responses (from 0.5 s before a speech tick's
    end to 1 s after it, or anywhere), a second one now and then, some never."""
    t = trace.t_s
    speech_ends = t[np.flatnonzero(np.diff((trace.level > 0.003).astype(int)) < 0)]
    times = []
    for term in log.terminals:
        if rng.random() < 0.25:
            continue  # no event for this beat
        later = speech_ends[speech_ends > term.t_s]
        base = float(later[rng.integers(min(later.size, 3))]) if later.size else term.t_s + 0.5
        times.append(base + float(rng.uniform(-0.5, 1.0)))
        if rng.random() < 0.2:
            times.append(times[-1] + float(rng.uniform(0, 1)))
    if rng.random() < 0.3:
        times.append(float(rng.uniform(0, t[-1] + 0.5)))  # one anywhere (between beats, before a terminal)
    if rng.random() < 0.3:
        times.append(float(t[int(rng.integers(t.size))]))  # exactly at a tick
    n = len(log.events)
    stops = [Event(kind, kind, x, n + i + 1) for i, x in enumerate(times)]
    return EventLog(tuple(sorted((*log.events, *stops), key=lambda e: (e.t_s, e.line))))


def test_the_page_replay_of_each_rule_decides_as_the_rules_replay():
    """``replay_ticks`` (what speechclock.js does, tick by tick) and ``clock.core.recommend.rules`` (every beat at
    once) give the same tick for every beat with speech, every rule; each beat's event is the one the page applies
    in it."""
    from test_decide import random_session

    from clock.core.provider import rule_stopped
    from clock.core.replay import replay_ticks
    from clock.core.thresholds import RULES

    rng = np.random.default_rng(25)
    checked, sooner = 0, 0
    for _ in range(300):
        trace, log = random_session(rng)
        log = with_stops(rng, trace, log, kind=str(rng.choice(["output_audio_buffer.stopped", "clock.stopped"])))
        floor = float(rng.choice([0.001, 0.003, 0.0045]))
        quiet = float(rng.choice([0.3, 1.0, 2.5]))
        hangover = float(rng.choice([0.1, 0.35, quiet, quiet + 0.5]))
        timeout = float(rng.choice([0.5, 2.0, float("inf")]))
        a = analyse(trace, log, floor=floor)
        stopped = rule_stopped(log, a)
        level = replay_ticks(trace, log, floor=floor, quiet_s=quiet, onset_timeout_s=timeout)
        for kind in RULES:
            h = hangover if kind in (STOPPED_QUIET, LEVEL_AFTER_STOPPED) else None
            played = replay_ticks(
                trace, log, floor=floor, quiet_s=quiet, onset_timeout_s=timeout, rule=kind, hangover_s=h
            )
            found = replay_rule([("s", a, stopped)], Rule(kind, quiet, h), onset_timeout_s=timeout)
            for c in found.beats:
                rb = played.beats[c.index]
                # The event the page applied in the beat is the rules' (unless the beat had closed before it came).
                assert rb.stopped_s in (None, stopped[c.index]), (kind, c, rb)
                if c.outcome in ("silent", "missed-onset"):
                    continue
                if a.beats[c.index].room_s == float("inf"):
                    continue  # (a bound the page caused moves: the rules declare where the page, replayed, would)
                assert c.declared_s == rb.quiet_declared_s, (kind, quiet, h, c, rb)
                checked += 1
                before = level.beats[c.index].quiet_declared_s
                sooner += rb.quiet_declared_s is not None and (before is None or rb.quiet_declared_s < before)
    # The sessions reach the rules' own decisions (the event ending beats before the level clock), not only its.
    assert checked > 1400 and sooner > 200
