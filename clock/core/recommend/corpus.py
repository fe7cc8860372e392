"""What the engine computes once per recording and shares, and what it reads at one floor.

Pure numpy. :class:`Corpus` caches each recording's analysis per floor, where
the guide spoke (as derive tells speech without the floor), a reference floor
each recording's beats are held to, and the derivations without some
recordings; :func:`at_floor` gathers the gaps, rooms, waits and latencies of
every beat at one floor (:class:`AtFloor`); :class:`Setting` is a candidate
setting and its failures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..analysis import FloorAnalysis, analyse, narration_pause_s
from ..model import Margins, Observation
from ..outcome import STALLED
from ..provider import BeatStop, beat_stops
from ..segments import segments
from ..speech import TickClasses, running_count, spoke_in
from .evidence import Derivation, FloorRun
from .windows import NOISE_PERCENTILE, RecordingLevels, beat_spans, clear_floor, own_floor, recording_levels

#: What bounds a beat whose log has no prompt before the next terminal response.
UNPROMPTED = ("terminal", "acknowledgment")


#: Without a prompt in the log, a beat's room ends this long before the next response (when no log shows it).
DEFAULT_PROMPT_DELAY_S = 1.0


#: Derives without some recordings (the members left out), once per corpus: the stability, held-out and rule runs
#: share it.
Without = Callable[[Sequence[int]], Derivation]


@dataclass
class Corpus:
    """What the engine computes once per recording, shared by the leave-one-out runs."""

    obs: list[Observation]
    levels: list[RecordingLevels]
    speech: list[NDArray[np.float64]]
    silence: list[NDArray[np.float64]]
    margins: Margins
    #: Each recording's ticks told apart (empty where only a replay is judged:
    #: :func:`clock.core.recommend.replay.judge`).
    classes: list[TickClasses] = field(default_factory=list)
    analyses: dict[tuple[int, float], FloorAnalysis] = field(default_factory=dict)
    own: dict[int, float | None] = field(default_factory=dict)
    times: dict[int, NDArray[np.float64]] = field(default_factory=dict)
    #: Derivations without some recordings (by the members left), shared by the stability and held-out runs.
    without: dict[tuple[int, ...], Derivation] = field(default_factory=dict)
    spoken: dict[int, NDArray[np.bool_]] = field(default_factory=dict)
    quiet: dict[int, tuple[list[int], float, float] | None] = field(default_factory=dict)

    @classmethod
    def of(cls, obs: list[Observation], margins: Margins) -> Corpus:
        """The corpus of these recordings: each one's ticks told apart and its levels, computed once."""
        parts = [recording_levels(o, margins) for o in obs]
        return cls(
            obs,
            [rec for rec, _ in parts],
            [o.trace.level[c.speech] for o, (_, c) in zip(obs, parts)],
            [o.trace.level[c.silence] for o, (_, c) in zip(obs, parts)],
            margins,
            [c for _, c in parts],
        )

    def own_floor(self, i: int) -> float | None:
        """Recording ``i``'s own floor (:func:`clock.core.recommend.windows.own_floor`), computed once."""
        if i not in self.own:
            self.own[i] = own_floor(self.levels[i])
        return self.own[i]

    def reference(self, i: int, floor: float) -> FloorAnalysis | None:
        """Recording ``i`` at the floor other floors are held to, where it lies under ``floor``, or None.

        Its own floor (:func:`clock.core.recommend.windows.own_floor`); where a quieter voice the level split takes for
        silence puts its noise within the margin of its speech (:meth:`quiet_voice`), no higher than 12 dB under
        that voice's median and 6 dB over its room's noise, so it hears that voice.
        """
        ref = self.own_floor(i)
        quiet = self.quiet_voice(i)
        if quiet is not None:
            _, room, voice = quiet
            under = max(2 * room, voice / 4)
            ref = under if ref is None else min(ref, under)
        return self.analysis(i, ref) if ref is not None and ref < floor else None

    def misread(self, i: int, a: FloorAnalysis) -> tuple[list[tuple[int, float]], list[int]]:
        """Where ``a`` (recording ``i`` at a floor) reads a beat otherwise than its reference (:meth:`reference`).

        Returns, per beat whose end both can tell (a prompt or the page's ``end`` bounds it alike at both floors,
        and the reference hears it), how much of its narration's end ``a``'s floor hides (s: the reference's last
        word less ``a``'s, inf where ``a`` hears none of it); and the beats whose acknowledgment ``a``'s floor
        takes for narration (the reference sees an acknowledgment, and ``a`` the narration's onset more than the
        quiet margin earlier).
        """
        ref = self.reference(i, a.floor)
        if ref is None:
            return [], []
        margin = self.margins.quiet_margin_s
        hidden, acks = [], []
        # Only beats with speech at this floor or at the reference say anything here.
        for j in np.union1d(a.active_beats(), ref.active_beats()).tolist():
            b, r = a.beats[j], ref.beats[j]
            # Only where a prompt (or the end) bounds the beat: without prompts, the span runs to the next terminal
            # response, and the next beat's acknowledgment, heard at one floor and not the other, is not its end.
            if not r.spoken or r.bound_s != b.bound_s or b.bound in UNPROMPTED or r.last_word_s is None:
                continue
            now = b.last_word_s if b.spoken and b.last_word_s is not None else float("-inf")
            hidden.append((j, r.last_word_s - now))
            if r.ack_end_tick is not None and r.onset_tick is not None and b.spoken:
                onset = b.onset_tick if b.onset_tick is not None else b.start_tick
                if onset is not None and float(a.t_s[r.onset_tick]) - float(a.t_s[onset]) > margin:
                    acks.append(j)
        return hidden, acks

    def spoke(self, i: int) -> NDArray[np.bool_]:
        """Each beat of recording ``i`` in which the guide spoke, as derive tells speech without the floor.

        By its labels where it has them; else where the level split finds
        speech in the beat's span, or where the recording's clear floor
        (:func:`clock.core.recommend.windows.clear_floor`: the lowest floor clear of
        its room) hears it. A floor at which such a beat is silent does not
        hear the guide there: a failure of that floor.
        """
        if i not in self.spoken:
            heard, said = self._spoke(i)
            self.spoken[i] = heard | said
        return self.spoken[i]

    def _spoke(self, i: int) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """Per beat of recording ``i``: heard at its clear floor (not with labels), and told speech by its ticks'
        classes (labels or split) within the beat's span."""
        o, rec = self.obs[i], self.levels[i]
        assert o.events is not None
        n = len(o.events.terminals)
        heard, said = np.zeros(n, bool), np.zeros(n, bool)
        clear = None if rec.method == "labels" else clear_floor(rec)
        if clear is not None:
            heard = self.analysis(i, clear).spoken()
        if self.classes and n:
            lo, hi = self.spans(i)
            said = spoke_in(running_count(self.classes[i].speech), lo, hi)
        return heard, said

    def spans(self, i: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Each beat's span of ticks ``[lo, hi)`` in recording ``i``, from the log alone (as its ticks' classes are
        kept inside beats: :func:`clock.core.recommend.windows.beat_spans`)."""
        o = self.obs[i]
        assert o.events is not None
        return beat_spans(o.trace, o.events)

    def quiet_voice(self, i: int) -> tuple[list[int], float, float] | None:
        """The beats of recording ``i`` whose quieter voice the level split takes for silence, where that is what
        puts its noise (p99) within the margin of its speech, or None.

        They are the beats heard at its clear floor whose spans hold silence ticks (as the split tells them) at
        or over the top of the window that noise would leave; the room's noise is not confined to some beats, so
        where every heard beat holds such ticks, or the silence outside them still reaches that top, it is the
        room's. Returns them, the recording's silence p99 outside their spans, and the median of their levels at
        its clear floor.
        """
        if i not in self.quiet:
            self.quiet[i] = self._quiet_voice(i)
        return self.quiet[i]

    def _quiet_voice(self, i: int) -> tuple[list[int], float, float] | None:
        rec = self.levels[i]
        o = self.obs[i]
        if not self.classes or not o.has_beats or rec.speech_low is None or rec.noise_high is None:
            return None
        top = rec.speech_low * 10 ** (-self.margins.floor_margin_db / 20)
        heard, _ = self._spoke(i)
        silence = self.classes[i].silence
        loud = np.concatenate([[0], np.cumsum(silence & (o.trace.level >= top), dtype=np.int64)])
        lo, hi = self.spans(i)
        quiet = np.flatnonzero(heard & (loud[hi] > loud[lo]))
        if quiet.size == 0 or quiet.size == np.count_nonzero(heard):
            return None
        inside = np.zeros(o.trace.n_ticks + 1, np.int64)
        np.add.at(inside, lo[quiet], 1)
        np.add.at(inside, hi[quiet], -1)
        rest = silence & (np.cumsum(inside)[:-1] == 0)
        noise = float(np.percentile(o.trace.level[rest], NOISE_PERCENTILE)) if rest.any() else 0.0
        if noise >= top:
            return None  # without them its silence still reaches its speech: the noise is the room's
        clear = clear_floor(rec)
        level = o.trace.level[(np.cumsum(inside)[:-1] > 0) & (o.trace.level > (clear or 0.0))]
        return quiet.tolist(), noise, float(np.median(level)) if level.size else 0.0

    def speech_unheard(self, i: int, a: FloorAnalysis) -> NDArray[np.int64]:
        """The beats of recording ``i`` in which the guide spoke (:meth:`spoke`) that ``a``'s floor does not hear
        (silent there; a beat the clock sees no tick of is unheard at every floor, and not counted)."""
        spoke = self.spoke(i)
        if not spoke.any():
            return np.zeros(0, np.int64)
        heard = a.spoken()
        if a.unheard is not None:
            heard[a.unheard] = True
        else:
            heard |= np.array([b.life_end_tick <= b.first_tick for b in a.beats], bool)
        return np.flatnonzero(spoke & ~heard)

    def pause(self, members: Sequence[int], floor: float) -> float:
        """``P`` of these recordings at this floor (:func:`clock.core.analysis.narration_pause_s`)."""
        return narration_pause_s([self.analysis(i, floor) for i in members if self.obs[i].has_beats])

    def stopped(self, i: int, floor: float) -> tuple[BeatStop, ...]:
        """Each beat's own provider event as the page's clock applies it, at one floor (:func:`beat_stops`)."""
        events = self.obs[i].events
        assert events is not None
        return beat_stops(events, self.analysis(i, floor))

    def analysis(self, i: int, floor: float) -> FloorAnalysis:
        """One recording's beats at one floor, analysed once (the tick times shared by every floor)."""
        key = (i, floor)
        if key not in self.analyses:
            o = self.obs[i]
            assert o.events is not None
            if i not in self.times:
                self.times[i] = o.trace.t_s
            self.analyses[key] = analyse(o.trace, o.events, floor=floor, t_s=self.times[i])
        return self.analyses[key]


@dataclass(frozen=True)
class Setting:
    """A candidate setting (quiet time or timeout None: none at that floor), how many beats it fails, and how it
    was reached."""

    floor: float
    quiet_s: float | None
    onset_timeout_s: float | None
    failures: int
    quiet_rule: str
    extended: bool = False
    #: What ``derive(prefer=...)`` said of its pick (for the floor's rule).
    note: str = ""
    #: How the replayed grid moved or placed the floor (for the floor's rule; empty: the engine's floor stands).
    floor_rule: str = ""
    #: The floors that end every beat right around it, where the replayed grid placed it.
    run: FloorRun | None = None


@dataclass
class AtFloor:
    """At one floor: the gaps, the room after last words, the waits and latencies of every beat."""

    gaps: list[tuple[str, float, float, bool]]  # recording, last word, gap, narration (logged beats)
    unlogged_gaps: list[tuple[str, float, float]]  # recording, last word, gap (recordings without a log)
    latencies: list[tuple[str, float, float]]  # recording, terminal, latency
    rooms: list[tuple[str, float, float]]  # recording, last word, room (less the prompt delay where unlogged)
    waits: list[float]
    needs: list[float]
    hidden: list[tuple[str, int, float]]  # recording, beat, narration end hidden by this floor (s)
    analyses: list[FloorAnalysis]
    narration_pause_s: float = 0.0  # P of these recordings at this floor
    unheard: list[tuple[str, int]] = field(default_factory=list)  # recording, beat: spoken, silent at this floor
    acks: list[tuple[str, int]] = field(default_factory=list)  # recording, beat: acknowledgment taken for narration


def prompt_delay(corpus: Corpus, members: Sequence[int]) -> float:
    """The median time from a prompt to its terminal response, over the logs that have both."""
    delays = []
    for i in members:
        events = corpus.obs[i].events
        if events is None:
            continue
        prompt = None
        for e in events.of_kind("prompt", "terminal"):
            if e.kind == "prompt":
                prompt = e.t_s
            elif prompt is not None:
                delays.append(e.t_s - prompt)
                prompt = None
    return float(np.median(delays)) if delays else DEFAULT_PROMPT_DELAY_S


def at_floor(corpus: Corpus, members: Sequence[int], floor: float, *, prompt_delay_s: float = 0.0) -> AtFloor:
    """The gaps, rooms, waits and latencies of every beat of ``members`` at one floor (a room without the prompt in
    the log ends ``prompt_delay_s`` before the next response)."""
    out = AtFloor([], [], [], [], [], [], [], [])
    out.narration_pause_s = corpus.pause(members, floor)
    for i in members:
        o = corpus.obs[i]
        if not o.has_beats:
            if o.events is None:
                seg = segments(o.trace, floor=floor)
                out.unlogged_gaps.extend((o.name, s.last_word_s, g) for s, g in zip(seg.segments, seg.gaps_s))
            continue
        a = corpus.analysis(i, floor)
        out.analyses.append(a)
        out.unheard.extend((o.name, j) for j in corpus.speech_unheard(i, a).tolist())
        out.gaps.extend((o.name, w, g, narration) for _, w, g, narration in a.gaps())
        hidden, acks = corpus.misread(i, a)
        out.hidden.extend((o.name, j, h) for j, h in hidden)
        out.acks.extend((o.name, j) for j in acks)
        pause = a.narration_pause_s  # (once per recording: it visits every beat)
        for b in (a.beats[j] for j in a.active_beats().tolist()):
            if not b.spoken:
                continue
            out.needs.append(b.need_s)
            if b.onset_tick is not None and not b.after_early_end:  # (an early end's consequence is not the voice's)
                out.latencies.append((o.name, b.terminal_s, float(a.t_s[b.onset_tick]) - b.terminal_s))
            if b.last_word_tick is not None and b.undone(pause) == STALLED:
                # Only a bound whose passing is a stall leaves room to respect: one the page caused moves with the
                # clock's declaration, and one the visitor, a superseding response or the recording's end caused is
                # not the setting's doing. Without the prompt in the log, the page prompted some time before the
                # next response.
                unknown = b.bound in ("terminal", "acknowledgment")
                if b.room_s in (float("-inf"), float("inf")):
                    continue  # speech runs into the bound: no quiet time ends it (the replay names it)
                out.rooms.append(
                    (o.name, float(a.t_s[b.last_word_tick]), b.room_s - (prompt_delay_s if unknown else 0))
                )
            if b.wait_s is not None:
                out.waits.append(b.wait_s)
    return out
