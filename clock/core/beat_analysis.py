"""One beat at one floor (:class:`BeatAnalysis`): its onset, acknowledgment, last word, and the quiet to bridge.

Pure numpy. Times are in seconds on the audio timeline; ticks index the trace.

* If speech is in progress at ``T`` (speech at the tick at or after ``T``
  and at the tick before it, or only a dip between words there), an
  acknowledgment overlaps the terminal response (``ack_overlap``). It runs
  on across dips between words and ends at the first pause: a dip between
  words is a quiet shorter than ``MIN_GAP_S`` (0.15 s, the default of
  ``--min-gap`` and ``Margins.min_gap_s``; see
  :func:`clock.core.segments.word_gaps`), a pause one at least that long.
  Its last word is the last speech tick before that pause.
* The **onset** is the first rising edge after ``T`` (a speech tick after a
  quiet tick), past the acknowledgment if one overlaps.
  ``onset_latency_s = onset_s - terminal_s``.
* The **narration** runs from the onset to the last speech tick of the span
  (``last_word_s``); its gaps (``gaps_s``) are the inter-sentence gaps,
  measured from a last word (``gap_at_s``) to the next onset;
  ``quiet_gaps_s`` counts only their unpaused time, as the clock does.

**Causes** (:mod:`clock.core.causes`): each beat's bound is the page's (a
``prompt``, ``end`` or terminal response after the page's own clock declared
the beat: it moves with a replayed declaration, so the silence after the last
word runs on, and speech that follows the last word within the beat's
pauses, or at once after the page's prompt, is the beat's own narration),
the visitor's (a ``prompt`` or ``end`` before the page's clock declared), or
the world's (a superseding terminal response, the end of the recording). A
log that says nothing of the page's declarations has bounds of unknown
cause: walls, as before.

A beat's outcome at any setting is the one judge's (:mod:`clock.core.outcome`), from what this analysis holds
(:meth:`BeatAnalysis.allows`). Every beat of a recording at one floor is :func:`clock.core.analysis.analyse`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .causes import CAUSE_NAMES, PAGE, UNKNOWN_CAUSE, VISITOR, WORLD
from .model import EPS_S
from .outcome import BOUND_KINDS, CODE, FAILURES, OUTCOMES, judge, undone_codes, visitor
from .pauses import paused_at, unpaused, unpaused_each
from .replay import PROMPT_ON_TIME_S
from .segments import MIN_GAP_S, word_gaps
from .spans import bound_ticks, in_progress

__all__ = ["RESPONSE_MIN_S", "BeatAnalysis", "analyse_beat", "idle_beat"]


#: Speech that begins this soon after a prompt the page caused is not the answer to it (a round trip to the
#: provider and its first audio take longer): it is the beat's own narration going on past the prompt.
RESPONSE_MIN_S = 0.15


_NO_TICK = np.zeros(0, np.int64)


_NO_REACH = np.zeros(0, np.float64)


_NO_TICK.setflags(write=False)


_NO_REACH.setflags(write=False)


@dataclass(frozen=True, slots=True)
class BeatAnalysis:
    """One beat at one floor: its bounds, where the guide speaks, and the quiet the clock must bridge.

    Tick indices refer to the trace. The clock sees the beat from
    ``first_tick`` (the first tick at or after the terminal response) until
    ``life_end_tick`` (exclusive: the tick at which the next terminal
    response or an ``end`` aborts it, or the end of the trace); the beat's
    span ends at ``bound_tick`` (the first tick at or after ``bound_s``).

    Attributes
    ----------
    index : int
    terminal_s, bound_s : float
    bound : str
        What ends the span (see :func:`clock.core.spans.span_bounds`).
    first_tick, life_end_tick, bound_tick : int
    start_tick : int or None
        The first speech tick the clock sees (it stops waiting).
    onset_tick : int or None
        The narration's onset: the first rising edge in the span, past an
        acknowledgment that overlaps the terminal response.
    ack_end_tick : int or None
        The overlapping acknowledgment's last speech tick: the last before
        its first pause (a quiet of at least ``MIN_GAP_S``; shorter quiets are
        dips between its words).
    last_word_tick : int or None
        The last speech tick of the span.
    wait_s : float or None
        Unpaused wait at the last waiting tick before ``start_tick`` (the
        onset timeout must exceed it); None when speech is at the first tick.
    idle_wait_s : float or None
        With no speech in the clock's life: the unpaused wait at its last tick.
    run_word, run_end : ndarray of int64
        The quiet runs after ``start_tick``: the last word before each, and
        the tick that ends it (the next speech tick, or ``life_end_tick``).
    run_reach_s : ndarray of float64
        The most quiet the clock counts in each run (unpaused, at an
        unpaused tick); -inf when it never counts in it.
    room_s : float
        The most quiet the clock counts after the span's last word before the
        bound; -inf when speech runs into the bound.
    count_s : ndarray of float64 or None
        Per-tick quiet counts from ``start_tick`` to ``life_end_tick``
        (-inf where speaking or paused), kept only when a pause touches the
        beat; without pauses a count is the time since the last word.
    last_word_s : float or None
        The time of ``last_word_tick``.
    speech_at_bound : bool
        The level is above the floor at ``bound_tick`` (the guide speaks as
        the span ends).
    pause_s : float
        The longest unpaused quiet between two speech runs of the narration
        (from the onset on) inside the span; 0 when it has none.
    cause : str
        Who caused the bound (:data:`CAUSE_NAMES`, :mod:`clock.core.causes`).
        A bound the page caused moves with the replayed declaration: the
        silence after the last word continues at the level it had
        (``room_s`` is inf), and where the guide spoke on past it (speech
        within ``pause_s`` of it), the span runs on to the end of that
        speech (``past_bound``).
    past_bound : bool
        The narration ran on past the page's bound (its prompt cut a pause
        short): the span ends after the speech that followed.
    after_early_end : bool
        The page's clock declared the beat before it before that beat's last
        word (its ``clock.quiet``, or the declaration inferred from its
        ``clock.setting``): the beat is where it is because the page ended the
        one before early, so its onset latency (the narration before it may
        still play at its terminal response) is the page's doing, not the
        voice's, and is left out of the onset evidence.
    guide_spoke : bool
        The guide made sound in the beat's span, whatever the floor
        (:attr:`clock.core.analysis.FloorAnalysis.guide_spoke`): where this floor hears none of
        it, the beat is a missed onset, not silent.
    silence_s : float
        The guide's own silence after its last word before the bound, where
        this floor hears the room's noise in it (:mod:`clock.core.speech`):
        longer than ``room_s``, which the bumps cut. NaN where it is
        ``room_s``.
    """

    index: int
    terminal_s: float
    bound_s: float
    bound: str
    first_tick: int
    life_end_tick: int
    bound_tick: int
    start_tick: int | None
    onset_tick: int | None
    ack_end_tick: int | None
    last_word_tick: int | None
    wait_s: float | None
    idle_wait_s: float | None
    run_word: NDArray[np.int64]
    run_end: NDArray[np.int64]
    run_reach_s: NDArray[np.float64]
    room_s: float
    count_s: NDArray[np.float64] | None
    last_word_s: float | None = None
    speech_at_bound: bool = False
    pause_s: float = 0.0
    cause: str = UNKNOWN_CAUSE
    past_bound: bool = False
    silence_s: float = float("nan")
    after_early_end: bool = False
    guide_spoke: bool = False

    @property
    def spoken(self) -> bool:
        """The guide spoke within the span (so the clock has something to end)."""
        return self.start_tick is not None and self.start_tick < self.bound_tick

    @property
    def inner(self) -> NDArray[np.bool_]:
        """Runs after which the guide speaks again within the span (a run that ends at its last word or before)."""
        return self.run_end <= (-1 if self.last_word_tick is None else self.last_word_tick)

    @property
    def ended_by_page(self) -> bool:
        """The visitor ended the beat: a ``prompt`` or ``end`` before the page's clock declared it (in a log that
        does not say who caused its bounds, an ``end``). Its outcome if the clock waits past it is ``aborted`` or
        ``outpaced``, never a failure."""
        return visitor(CAUSE_NAMES.index(self.cause), BOUND_KINDS.index(self.bound))

    @property
    def need_s(self) -> float:
        """The longest quiet inside the span: a quiet time must exceed it (-inf if none)."""
        inner = self.run_reach_s[self.inner]
        return float(inner.max()) if inner.size else float("-inf")

    def speaking_at_end(self, narration_pause_s: float) -> bool:
        """The visitor's bound (:attr:`ended_by_page`) ends the span while the guide speaks.

        Speech at the bound's tick, or a last word closer to the bound than
        ``narration_pause_s`` (the longest pause inside a narration of the
        recordings judged together): the guide may have been between two
        sentences.
        """
        if not self.ended_by_page or not self.spoken:
            return False
        if self.speech_at_bound:
            return True
        return self.last_word_s is not None and self.bound_s - self.last_word_s < narration_pause_s

    def undone(self, narration_pause_s: float) -> str:
        """The outcome of a beat the clock did not declare quiet in before its bound
        (:func:`clock.core.outcome.undone_codes`)."""
        code = undone_codes(
            np.array([CAUSE_NAMES.index(self.cause)]), np.array([BOUND_KINDS.index(self.bound)]),
            np.array([self.speech_at_bound]),
            np.array([np.nan if self.last_word_s is None else self.bound_s - self.last_word_s]), narration_pause_s,
        )  # fmt: skip
        return OUTCOMES[int(code[0])]

    def allows(self, quiet_s: float, onset_timeout_s: float, *, narration_pause_s: float) -> bool:
        """Whether this setting ends the beat right: its outcome (the one judge's) is not one of :data:`FAILURES`.

        ``narration_pause_s`` decides whether a bound the visitor caused came
        while the guide spoke (``aborted``) or after it had finished
        (``outpaced``): see :meth:`speaking_at_end`. Neither is a failure.
        """
        if not self.spoken:
            return not self.guide_spoke
        wait = np.array([np.nan if self.wait_s is None else self.wait_s])
        undone = np.array([CODE[self.undone(narration_pause_s)]], np.int8)
        code = judge(
            np.array([True]), wait, np.array([self.need_s]), np.array([self.room_s]), undone,
            np.array([quiet_s - EPS_S]), onset_timeout_s, np.array([self.silence_s]),
        )  # fmt: skip
        return OUTCOMES[int(code[0, 0])] not in FAILURES


def analyse_beat(
    index: int,
    terminal_s: float,
    bound_s: float,
    bound: str,
    k0: int,
    ka: int,
    t: NDArray[np.float64],
    speech: NDArray[np.bool_],
    speech_idx: NDArray[np.int64],
    spans: tuple[tuple[float, float], ...],
    cause: str = UNKNOWN_CAUSE,
    stop: int = 0,
    declared_s: float = float("nan"),
    own_stop_s: float = float("nan"),
    linger_s: float = 0.0,
    bump: NDArray[np.bool_] | None = None,
) -> BeatAnalysis:
    """One beat at one floor (see :class:`BeatAnalysis`); ``stop`` is what ends its life
    (:data:`clock.core.spans.STOPS`), ``declared_s`` where the page's clock declared it, ``own_stop_s`` when the
    provider said the beat's own response's audio drained (NaN: not known), ``bump`` the room's noise
    (:func:`_analyse_span`)."""
    a = _analyse_span(index, terminal_s, bound_s, bound, k0, ka, t, speech, speech_idx, spans, bump)
    a = replace(a, cause=cause)
    if not a.spoken:
        return a
    assert a.last_word_tick is not None
    kd = int(np.searchsorted(t, declared_s, side="left")) if declared_s == declared_s else -1
    if a.first_tick <= kd < min(a.bound_tick, t.size) and bool(speech[kd]) and a.last_word_tick >= a.bound_tick - 1:
        # This floor hears sound where the page's clock heard the silence it declared on (noise, word tails), on
        # into the bound: at the level it had, the clock never declares, so the beat stalls, whatever the bound.
        return replace(a, cause=PAGE, room_s=float("-inf"), speech_at_bound=True)
    if cause != PAGE:
        return a
    on_time = declared_s == declared_s and abs(a.bound_s - (declared_s + linger_s)) <= PROMPT_ON_TIME_S
    return _moved(a, t, speech, speech_idx, spans, stop, declared_s, own_stop_s, on_time, bump)


def _moved(
    a: BeatAnalysis,
    t: NDArray[np.float64],
    speech: NDArray[np.bool_],
    speech_idx: NDArray[np.int64],
    spans: tuple[tuple[float, float], ...],
    stop: int,
    declared_s: float,
    own_stop_s: float = float("nan"),
    on_time: bool = True,
    bump: NDArray[np.bool_] | None = None,
) -> BeatAnalysis:
    """A spoken beat whose bound the page caused, as a replay at any setting sees it: the bound moves with the
    replayed declaration, so the silence after the last word continues at the level it had (room inf). Where the
    guide spoke on past the bound (speech that follows the last word within the beat's longest pause, at least a
    dip between words), that speech is the beat's own narration, up to the first longer silence or the end of the
    beat's life (speech that begins within RESPONSE_MIN_S of a bound that came as the page prompts, its declaration
    plus the beat's linger, is the narration's whatever the silence before it); speech that runs into the next
    response stalls it (at the level it had, the clock never declares), into the end of the recording ends it
    there, into an ``end`` the visitor's. Where the provider said when the
    beat's own response's audio drained (``own_stop_s``, by its ``response_id``), the narration is the speech
    that begins before that, whatever the silences in it. Where this floor hears the room's noise after the last
    word (``bump``), the silence continues as it was, bumps and all: the most quiet the clock counted in it before
    the bound is all the room it has, and the noise heard past the bound is no narration."""
    assert a.last_word_tick is not None
    n, ka = t.size, a.life_end_tick
    join_s = max(a.pause_s, MIN_GAP_S)
    said = speech_idx if bump is None else speech_idx[~bump[speech_idx]]
    later = said[(said >= a.bound_tick) & (said < a.life_end_tick)]
    last = a.last_word_tick
    if later.size:
        breaks = np.flatnonzero(np.diff(later) > 1)
        starts = np.concatenate([[later[0]], later[breaks + 1]]).tolist()
        ends = np.concatenate([later[breaks], [later[-1]]]).tolist()
        for rs, re_ in zip(starts, ends):
            gap = float(unpaused(float(t[last]), t[rs : rs + 1], spans)[0])
            if own_stop_s == own_stop_s:  # (the provider's own word: its audio up to then is the beat's)
                if float(t[rs]) >= own_stop_s:
                    break
            elif on_time and last == a.last_word_tick and float(t[rs]) < a.bound_s + RESPONSE_MIN_S:
                join_s = max(join_s, gap)  # (no answer to the prompt is heard this soon: the narration goes on)
            elif gap > join_s + EPS_S:
                break
            last = re_
    if stop == 0 and last < ka - 1:
        # Nothing stops the beat's life before the recording ends: the silence runs on to the recording's end,
        # the world's bound (a quiet time longer than it finds the recording ended, not a failure).
        out = _analyse_span(a.index, a.terminal_s, a.bound_s, "recording end", a.first_tick, ka, t, speech,
                            speech_idx, spans, bump)  # fmt: skip
        return replace(out, cause=WORLD, past_bound=last != a.last_word_tick)
    if last == a.last_word_tick:
        heard = speech_idx[(speech_idx > last) & (speech_idx < a.bound_tick)]
        return a if heard.size else replace(a, room_s=float("inf"))  # (bumps heard after the last word: as it was)
    into = last >= ka - 1  # the speech runs into the end of the beat's life
    kind = "recording end" if into and stop == 0 else a.bound
    bound_s = float(t[last + 1]) if last + 1 < n else float(t[-1]) + (float(t[-1] - t[-2]) if n > 1 else 0.0)
    out = _analyse_span(a.index, a.terminal_s, bound_s, kind, a.first_tick, ka, t, speech, speech_idx, spans, bump)
    if not into:
        return replace(out, cause=PAGE, past_bound=True, room_s=float("inf"), bound=a.bound)
    if stop == 1:
        # The level stays above the floor into the next response. Where the page's clock heard a silence this
        # floor hears too (quiet at its declaration's tick), this is the narration going on, the next response's
        # audio queued after it: its end is not seen, and the silence after it is taken to run on. Where this floor
        # hears sound the page's clock took for silence (noise, word tails), at the level it had the clock never
        # declares: the beat stalls.
        kd = int(np.searchsorted(t, declared_s, side="left")) if declared_s == declared_s else -1
        heard_quiet = 0 <= kd < n and not bool(speech[kd])
        room = float("inf") if heard_quiet or declared_s != declared_s else float("-inf")
        return replace(out, cause=PAGE, past_bound=True, room_s=room, bound=a.bound, speech_at_bound=True)
    # Into the end of the recording (the world's), or an ``end`` the visitor pressed while the guide spoke.
    return replace(out, cause=WORLD if stop == 0 else VISITOR, past_bound=True, bound="recording end" if stop == 0
                   else "end", speech_at_bound=True)  # fmt: skip


def _analyse_span(
    index: int,
    terminal_s: float,
    bound_s: float,
    bound: str,
    k0: int,
    ka: int,
    t: NDArray[np.float64],
    speech: NDArray[np.bool_],
    speech_idx: NDArray[np.int64],
    spans: tuple[tuple[float, float], ...],
    bump: NDArray[np.bool_] | None = None,
) -> BeatAnalysis:
    """One beat's span at one floor (see :class:`BeatAnalysis`). ``bump``: the ticks that are the room's noise, not
    the guide's words (:func:`clock.core.speech.noise_bumps`; None: none). The clock hears a bump as any sound (its
    count starts again), but the beat's words, its last word and its narration's pauses are the guide's alone."""
    n = t.size
    kb = min(int(np.searchsorted(t, bound_s, side="left")), ka) if bound != "recording end" else ka
    kb = max(kb, k0)
    lo, hi = np.searchsorted(speech_idx, [k0, ka])
    spoken = speech_idx[lo:hi]
    if spoken.size == 0:
        idle = None
        if ka > k0:
            idle = float(unpaused(terminal_s, t[ka - 1 : ka], spans)[0])
        return BeatAnalysis(
            index, terminal_s, bound_s, bound, k0, ka, kb, None, None, None, None, None, idle,
            _NO_TICK, _NO_TICK, np.zeros(0), float("-inf"), None,
        )  # fmt: skip
    said = spoken if bump is None else spoken[~bump[spoken]]
    if said.size == spoken.size or not said[said < kb].size:
        said = spoken  # (no bump heard, or no word in the span: every tick heard is taken as the guide's)
    noisy = said.size < spoken.size
    touched = noisy or any(
        lo_p <= (float(t[ka - 1]) if ka > k0 else terminal_s) and hi_p > terminal_s for lo_p, hi_p in spans
    )
    ks = int(spoken[0])
    wait = float(unpaused(terminal_s, t[ks - 1 : ks], spans)[0]) if ks > k0 else None
    # Acknowledgment and narration onset, as the span shows them: speech in progress at the terminal response
    # (across its tick, or with only a dip between words there) is an acknowledgment.
    ack = bool(lo > 0 and in_progress(t, speech_idx[lo - 1], speech_idx[lo], k0))
    # (the guide's words: the onset, an acknowledgment's end and the last word are theirs)
    ack_end, onset, last_word = _words(said[said < kb], ack, t)
    # Quiet runs after the clock starts, within its life.
    ends = np.concatenate([spoken[1:], [ka]])
    keep = ends > spoken + 1
    run_word, run_end = spoken[keep], ends[keep]
    count, reach, room, silence = _quiet_reach(
        t, ks, ka, kb, run_word, run_end, last_word, spans, touched=touched, noisy=noisy
    )
    pause = _narration_pause(t, said, onset, last_word, run_word, run_end, kb, spans, noisy=noisy)
    return BeatAnalysis(
        index, terminal_s, bound_s, bound, k0, ka, kb, ks, onset, ack_end, last_word, wait, None,
        run_word, run_end, np.asarray(reach, np.float64), room, count,
        None if last_word is None else float(t[last_word]),
        bool(kb < n and speech[kb] and not (noisy and bump is not None and bump[kb])), pause, silence_s=silence,
    )  # fmt: skip


def _words(in_span: NDArray[np.int64], ack: bool, t: NDArray[np.float64]) -> tuple[int | None, int | None, int | None]:
    """Where the guide's words in the span (``in_span``, speech ticks) put an overlapping acknowledgment's end
    (``ack``: one overlaps the terminal response), the narration's onset and the last word (None: none)."""
    if not in_span.size:
        return None, None, None
    breaks = np.flatnonzero(np.diff(in_span) > 1)
    run_starts = np.concatenate([[in_span[0]], in_span[breaks + 1]])
    run_ends = np.concatenate([in_span[breaks], [in_span[-1]]])
    last_word = int(in_span[-1])
    if not ack:
        return None, int(run_starts[0]), last_word
    # The acknowledgment runs on across dips between words; the first pause ends it.
    pauses = np.flatnonzero(~word_gaps(run_starts, run_ends, t))
    last = int(pauses[0]) if pauses.size else run_ends.size - 1
    onset = int(run_starts[last + 1]) if last + 1 < run_starts.size else None
    return int(run_ends[last]), onset, last_word


def _quiet_reach(
    t: NDArray[np.float64],
    ks: int,
    ka: int,
    kb: int,
    run_word: NDArray[np.int64],
    run_end: NDArray[np.int64],
    last_word: int | None,
    spans: tuple[tuple[float, float], ...],
    *,
    touched: bool,
    noisy: bool,
) -> tuple[NDArray[np.float64] | None, NDArray[np.float64], float, float]:
    """The quiet the clock counts from its first speech tick ``ks``: ``(count, reach, room, silence)``.

    ``reach``, the most in each quiet run; ``room``, the most after the span's last word before the bound
    (-inf: none); ``count``, the per-tick counts where a pause or the room's noise touches the beat (``touched``;
    else None); ``silence``, the guide's own unpaused silence after its last word where the floor hears the room's
    noise in it (``noisy``; else NaN).
    """
    silence = float("nan")
    if not touched:
        reach = t[run_end - 1] - t[run_word]
        room = float(t[kb - 1] - t[last_word]) if last_word is not None and last_word < kb - 1 else float("-inf")
        return None, reach, room, silence
    count = _counts(t, ks, ka, run_word, run_end, spans)
    reach = np.array([count[w + 1 - ks : e - ks].max() for w, e in zip(run_word, run_end)], np.float64)
    room = float("-inf")
    if last_word is not None and last_word < kb - 1:
        room = float(count[last_word + 1 - ks : kb - ks].max())
        if noisy:
            silence = float(unpaused(float(t[last_word]), t[kb - 1 : kb], spans)[0])
    return count, reach, room, silence


def _narration_pause(
    t: NDArray[np.float64],
    said: NDArray[np.int64],
    onset: int | None,
    last_word: int | None,
    run_word: NDArray[np.int64],
    run_end: NDArray[np.int64],
    kb: int,
    spans: tuple[tuple[float, float], ...],
    *,
    noisy: bool,
) -> float:
    """The longest unpaused quiet between two of the narration's speech runs inside the span (0: none)."""
    pause = 0.0
    if onset is not None and noisy:
        # The narration's pauses are between the guide's words: a bump inside one does not split it.
        w_idx = said[(said >= onset) & (said <= (last_word if last_word is not None else -1))]
        apart = np.flatnonzero(np.diff(w_idx) > 1)
        if apart.size:
            pause = float(unpaused_each(t[w_idx[apart]], t[w_idx[apart + 1]], spans).max())
    elif onset is not None:
        inner = (run_end < kb) & (run_word >= onset)
        if inner.any():
            w_in, e_in = run_word[inner], run_end[inner]
            if not spans:
                pause = float((t[e_in] - t[w_in]).max())
            else:
                pause = max(float(unpaused(float(t[w]), t[e : e + 1], spans)[0]) for w, e in zip(w_in, e_in))
    return pause


def _counts(
    t: NDArray[np.float64],
    ks: int,
    ka: int,
    run_word: NDArray[np.int64],
    run_end: NDArray[np.int64],
    spans: tuple[tuple[float, float], ...],
) -> NDArray[np.float64]:
    """The clock's quiet count at each tick of ``[ks, ka)``, -inf where it speaks or is paused."""
    count = np.full(ka - ks, float("-inf"))
    for w, e in zip(run_word.tolist(), run_end.tolist()):
        count[w + 1 - ks : e - ks] = unpaused(float(t[w]), t[w + 1 : e], spans)
    count[paused_at(t[ks:ka], spans)] = float("-inf")
    return count


def idle_beat(base: dict[str, Any], acknowledged: dict[int, float], spoke: NDArray[np.bool_], j: int) -> BeatAnalysis:
    """Beat ``j`` without speech in the clock's life, from its log's arrays
    (see :func:`clock.core.analysis.analyse`)."""
    bound_s = acknowledged.get(j)
    code = int(base["code"][j]) if bound_s is None else BOUND_KINDS.index("acknowledgment")
    k0, ka = int(base["k0"][j]), int(base["ka"][j])
    if bound_s is None:
        bound_s, kb = float(base["bound_s"][j]), int(base["kb"][j])
    else:
        kb = int(bound_ticks(base["t_s"], np.array([bound_s]), np.array([code]), base["k0"][j], base["ka"][j])[0])
    wait = float(base["wait"][j])
    return BeatAnalysis(
        j, float(base["term_t"][j]), bound_s, BOUND_KINDS[code], k0, ka, kb,
        None, None, None, None, None, None if wait != wait else wait,
        _NO_TICK, _NO_TICK, _NO_REACH, float("-inf"), None, cause=CAUSE_NAMES[int(base["cause"][j])],
        guide_spoke=bool(spoke[j]),
    )  # fmt: skip
