"""The check that holds the page's own log to the replay: ``logged-quiet``, and the setting a log says it ran.

The page logs each declaration (``clock.quiet``) and, with speechclock.js,
the setting it ran (``clock.setting``) and the levels it read
(``clock.level``: its own ticks). The replay's decisions are compared with
the logged ones only at the setting the page ran, within one tick of the
recording (plus the log's 1 ms resolution) and, where the page logged its
levels, one of its own tick intervals.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import replace

from .beats import LEVEL, Beat, heard
from .check_input import Checked, Finding, Verdict, plural
from .events import EventLog
from .model import EPS_S
from .thresholds import Thresholds

__all__ = ["UNSAID", "logged_quiet", "logged_setting"]

#: What a logged-quiet line says of a log that does not state its setting.
UNSAID = "the log does not say which setting the page ran"

#: The resolution of a page's ``performance.now()`` log.
_LOG_RESOLUTION_S = 0.001

_SETTING = ("floor", "quiet_s", "onset_timeout_s")


def logged_setting(log: EventLog | None) -> tuple[float, float, float] | None:
    """(floor, quiet_s, onset_timeout_s) the page ran as its log says: its ``clock.setting`` line (speechclock.js
    writes it), else its ``session`` line's ``floor``, ``quiet_s`` and ``onset_timeout_s``; None where it says
    neither. ``onset_timeout_s`` is ``inf`` where the page waited forever."""
    if log is not None and log.setting is not None:
        s = log.setting
        return s.floor, s.quiet_s, s.onset_timeout_s
    session = log.session if log is not None else {}
    said = [session.get(k) for k in _SETTING]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in said):
        return float(said[0]), float(said[1]), float(said[2])  # type: ignore[arg-type]
    return None


def _page_setting(c: Checked) -> tuple[tuple[float, float, float] | None, bool]:
    """(floor, quiet_s, onset_timeout_s) the page ran, and whether its log says so.

    The log's ``clock.setting`` line (speechclock.js writes it), else its ``session`` line's
    ``floor``, ``quiet_s`` and ``onset_timeout_s``; where it says neither, ``page_thresholds`` (the
    committed setting, which the page may or may not have run), not known.
    """
    said = logged_setting(c.obs.events)
    if said is not None:
        return said, True
    given: Thresholds | None = c.options.page_thresholds
    if given is None:
        return None, False
    return (given.floor, given.quiet_s, given.onset_timeout_s), False


def logged_quiet(c: Checked) -> Verdict:
    """``logged-quiet``: the replay's decisions are within one tick of the page's ``clock.quiet``.

    Compared only at the setting the page ran: where the log says a setting (or rule) other than the checked
    one, the beats are replayed at the page's; where it does not say, and the committed setting differs from
    the checked one, the check does not apply and says why. A failing line of a recording whose start is
    uncertain says what would align its log (:func:`_alignment_hint`).
    """
    r, th = c.replayed, c.th
    page, known = _page_setting(c)
    logged = [b for b in r.heard if b.replay_vs_logged_s is not None]
    here = (th.floor, th.quiet_s, th.onset_timeout_s)
    differs = page is not None and any(abs(a - b) > EPS_S for a, b in zip(here, page))
    if known and page is not None and (r.rule[0] != LEVEL or differs):
        # The log says what the page ran: its decisions are held to the replay at that setting, with its rule.
        at_page = c.replay_at(
            floor=page[0], quiet_s=page[1], onset_timeout_s=page[2], rule=r.rule[0], hangover_s=r.rule[1]
        )
        ran = f"floor {page[0]:g}, quiet {page[1]:g} s, onset timeout {page[2]:g} s"
        if r.rule[0] != LEVEL:
            ran += f", rule {r.rule[0]}" + ("" if r.rule[1] is None else f" with hangover {r.rule[1]:g} s")
        replayed = [b for b in heard(at_page) if b.replay_vs_logged_s is not None]
        verdict = _held_to_the_log(c, replayed, at=f"at the page's setting ({ran})")
    elif logged and page is not None and differs:
        return _not_at_the_page_setting(logged, page, known)
    else:
        verdict = _held_to_the_log(c, logged, known=known)
    hint = _alignment_hint(c)
    if not hint:
        return verdict
    # A logged decision off by the start's uncertainty: the line says what aligns it.
    return replace(verdict, failures=[replace(f, detail=f.detail + hint) for f in verdict.failures])


def _not_at_the_page_setting(logged: Sequence[Beat], page: tuple[float, float, float], known: bool) -> Verdict:
    """``logged-quiet`` at a setting the page did not run (or may not have run): not applicable, and why."""
    if known:
        ran = f"floor {page[0]:g}, quiet {page[1]:g} s, onset timeout {page[2]:g} s"
        made = f"{plural(len(logged), 'logged decision')} made at the page's setting, {ran}, not at this one"
        want = "compared only at that setting, not at this one"
    else:
        made = f"{plural(len(logged), 'logged decision')}; {UNSAID}"
        want = "compared only at the committed setting, not at this one"
    return Verdict([], Finding(None, made, want), False)


def _page_tick_s(page_ticks_s: Sequence[float], b: Beat) -> float:
    """The longest interval between the page's own ticks (its ``clock.level`` readings) in a beat, up to its
    logged declaration: the page decides on its ticks, the replay on the recording's regular grid, so the page's
    last word and its declaration can each lie up to that interval from the replay's (0 without readings)."""
    if b.logged_quiet_s is None or len(page_ticks_s) < 2:
        return 0.0
    lo, hi = bisect_left(page_ticks_s, b.terminal_s), bisect_right(page_ticks_s, b.logged_quiet_s)
    near = page_ticks_s[max(lo - 1, 0) : min(hi + 1, len(page_ticks_s))]
    return max((y - x for x, y in zip(near, near[1:])), default=0.0)


def _held_to_the_log(c: Checked, logged: Sequence[Beat], *, known: bool = True, at: str = "") -> Verdict:
    """The replay's decisions against the page's ``clock.quiet``, at the setting the page ran.

    ``known``: the log says which setting that was; else a failing line says it does not (it
    was compared at the committed setting, which the page may not have run). Where the page logged its levels
    (its own ticks), one of its tick intervals in the beat is allowed besides the replay's tick
    (:func:`_page_tick_s`).
    """
    tick_s = c.replayed.tick_s
    allowed = tick_s + _LOG_RESOLUTION_S
    unsaid = (f" {at}" if at else "") + ("" if known else f" ({UNSAID})")
    ticks = sorted(r.t_s for r in c.replayed.log.readings)
    bound = {b.index: allowed + _page_tick_s(ticks, b) for b in logged}
    return Verdict(
        [
            Finding(
                b.logged_quiet_s,
                f"beat {b.index + 1}: replay {b.replay_vs_logged_s:+.3f} s from logged{unsaid}",
                f"one tick ({tick_s:.4f} s)" + (" and one of the page's" if bound[b.index] > allowed else ""),
                abs(b.replay_vs_logged_s or 0.0),
                bound[b.index],
                "s",
            )
            for b in logged
            if abs(b.replay_vs_logged_s or 0.0) > bound[b.index]
        ],
        Finding(
            None,
            f"{len(logged)} logged decisions" + (f" {at}" if at else ""),
            f"within one tick ({tick_s:.4f} s)",
            max((abs(b.replay_vs_logged_s or 0.0) for b in logged), default=None),
            allowed,
            "s",
        ),
        bool(logged),
    )


def _alignment_hint(c: Checked) -> str:
    """What a failing logged-quiet line adds where the recording's start is uncertain and the log was not aligned:
    the config key that aligns it, or that the log holds no clock.level readings to align it by."""
    log, a = c.obs.events, c.obs.agreement
    if log is None:
        return ""
    exact = a.start_exact if a is not None else log.start is not None and log.start.capture == "worklet"
    if exact:
        return ""
    if a is not None and a.n_compared and a.offset_estimated:
        if c.options.align_log:
            return ""  # aligned already: the difference is the clock's
        return (
            "; the start is uncertain (MediaRecorder): align_log = true in [agreement] aligns the log by its readings"
        )
    if log.start is None or log.start.capture != "recorder":
        return ""  # the log does not say its start is uncertain
    return (
        "; the start is uncertain (MediaRecorder): log clock.level readings (docs/capture.md), and align_log = true "
        "in [agreement] aligns the log by them"
    )
