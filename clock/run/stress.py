"""``speechclock stress``: each recording changed along each axis, replayed, where :mod:`clock.run.workers` says.

One task per recording (on a pool, per group of its lines: see below):
every line of every setting scanned, value by
value, to its first failing value (see :mod:`clock.core.stress`). The
changed recordings stream: each pass decodes the recording block by block
and changes every block several ways at once (a few values of each line
still open; :func:`changed_traces`), keeping only their level traces, which
are judged and dropped before the next pass. So the memory is a few traces,
whatever the recording's length, and the time is the passes' (at most the
longest line's values, fewer on a short recording) times its length. The
changed traces are shared by the settings, and kept in the trace cache. A
recording whose lines are all answered from the cache is not decoded; pause
needs no decode. The corpus's margins are
combined from the recordings' in corpus order, so a run gives the same
result serially, with ``jobs`` processes or on Dask. On a pool (or Dask),
each recording's lines are split by the work they share
(:func:`_line_groups`) into tasks of their own, the costliest first: a long
recording's lines are spread over the workers.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.beats import Beat, beats
from ..core.check import CheckResult
from ..core.levels import LevelChunk, LevelStream, LevelTrace
from ..core.model import Margins, Observation
from ..core.recommend.engine import derive
from ..core.recommend.evidence import CorpusOutcome
from ..core.recommend.replay import judge
from ..core.stress import (
    AXES,
    LOSS_PCT,
    UNCHANGED,
    Failure,
    Line,
    LineMargin,
    PinkNoise,
    SettingStress,
    StressResult,
    add_noise,
    apply_gain,
    combine,
    failure_of,
    first_failure,
    line_margin,
    lost_beat,
    margin_line,
    recording_seed,
    robust_score,
    robustness_axes,
    robustness_checks,
    stretch_gaps,
)
from ..core.stress import lines as axis_lines
from ..core.tally import UNHEARD_SPEECH, Tally
from ..core.thresholds import Thresholds
from ..errors import SpeechClockWarning
from ..io.decode import AudioInfo, iter_blocks, probe
from ..io.transforms import HOLD_SAMPLES, LOSS_BITRATE_KBPS, LossDraws, OpusReceiver, OpusSender
from .cache import TraceCache, resolve_cache
from .results import cached_result
from .workers import Workers, quietly, run_ordered

__all__ = ["Setting", "robust_preference", "robustness_results", "settings_for", "stress", "stress_observations"]

#: (label, floor, quiet_s, onset_timeout_s)
Setting = tuple[str, float, float, float]


def settings_for(
    observations: Sequence[Observation],
    committed: Thresholds,
    *,
    label: str = "committed",
    margins: Margins | None = None,
    recommended: bool = True,
) -> list[Setting]:
    """The committed (or candidate) setting and, when asked and derive recommends one, derive's recommendation."""
    out: list[Setting] = [(label, committed.floor, committed.quiet_s, committed.onset_timeout_s)]
    if recommended:
        floor, quiet, timeout = derive(observations, margins=margins, held_out=False).setting
        if floor is not None and quiet is not None and timeout is not None:
            out.append(("recommended", floor, quiet, timeout))
    return out


@dataclass(frozen=True, slots=True)
class _Task:
    source: Any  # the recording's path or URL
    obs: Observation
    settings: tuple[Setting, ...]
    lines: tuple[Line, ...]
    search: str
    seed: int
    margins: Margins
    cache: TraceCache | None = None


_Found = tuple[int | None, Failure | None]

#: Values of a codec line one pass computes: each is an encode, wasted past the line's first failure.
CODEC_AHEAD = 2
#: Changed traces one pass over a recording computes at most (each holds a level engine, about 1.3 MB): the
#: loss values (one encode) and the codec lines' first values together.
MAX_JOBS_PER_PASS = 2 * len(LOSS_PCT) + 2 * CODEC_AHEAD
#: The levels of the changed traces one pass holds at most (bytes): a long recording takes fewer per pass.
PASS_TRACE_BYTES = 24 * 2**20
#: Values of a gain or noise line the first pass computes when no codec line is open (then as many as it
#: has computed so far: what a line computes past its first failure is at most what it needed).
FIRST_AHEAD = 4
#: What a changed trace's cache key says of the change's model (bumped when a transform changes).
_MODEL = 2

#: An Opus sender's settings: (bitrate in kb/s, DTX on).
_Link = tuple[float, bool]


def _link(line: Line, value: float) -> _Link | None:
    """The encode a codec or loss change decodes (None: gain and noise change the samples).

    A loss line's encode (:data:`LOSS_BITRATE_KBPS`, DTX off) is the codec
    line's at that bitrate: one sender serves both.
    """
    if line.axis == "codec":
        return (float(value), line.variant == "dtx-on")
    if line.axis == "loss":
        return (float(LOSS_BITRATE_KBPS), False)
    return None


class _Change:
    """One line's change at one value, applied block by block as the recording is decoded.

    Codec and loss changes decode the packets of a sender shared by every
    change of the pass with the same encode (:func:`_link`); a loss change
    drops its own packets (:class:`~clock.io.transforms.LossDraws`) before
    decoding them.
    """

    def __init__(self, line: Line, value: float, seed: int) -> None:
        self.line, self.value = line, value
        self.link = _link(line, value)
        self.receiver: OpusReceiver | None = None
        self.loss = LossDraws(value, burst=line.variant == "burst", seed=seed) if line.axis == "loss" else None

    def _received(self, sent: tuple[OpusSender, list[bytes]]) -> tuple[OpusReceiver, list[bytes | None]]:
        sender, packets = sent
        if self.receiver is None:
            self.receiver = OpusReceiver(sender.sample_rate_hz, lookahead=sender.lookahead)
        if self.loss is None:
            return self.receiver, list(packets)
        gone = self.loss.next(len(packets)).tolist()
        return self.receiver, [None if g else p for p, g in zip(packets, gone)]

    def feed(
        self, block: NDArray[np.float32], noise: NDArray[np.float32] | None, sent: dict[_Link, Any]
    ) -> NDArray[np.float32]:
        axis = self.line.axis
        if axis == "gain":
            return apply_gain(block, self.value)
        if axis == "noise":
            assert noise is not None
            return add_noise(block, noise, self.value)
        assert self.link is not None
        receiver, packets = self._received(sent[self.link])
        return receiver.feed(packets, hold=HOLD_SAMPLES)

    def finish(self, sent: dict[_Link, Any]) -> NDArray[np.float32]:
        if self.link is None:
            return np.zeros(0, np.float32)
        sender = sent[self.link][0]
        receiver, packets = self._received(sent[self.link])
        return receiver.finish(packets, n_samples_48k=sender.n_samples_48k, n_samples=sender.n_samples)


class _Levels:
    """A changed trace's levels as its chunks come, in one array of the unchanged trace's length (grown if not)."""

    def __init__(self, n_ticks: int) -> None:
        self.level = np.empty(n_ticks, np.float64)
        self.n = 0

    def add(self, chunks: Sequence[LevelChunk]) -> None:
        for c in chunks:
            end = self.n + c.level.size
            if end > self.level.size:
                self.level = np.concatenate([self.level[: self.n], np.empty(max(end - self.n, self.n), np.float64)])
            self.level[self.n : end] = c.level
            self.n = end


def changed_traces(
    source: Any, trace: LevelTrace, changes: Sequence[tuple[Line, float]], *, seed: int, webrtc_int16: bool = False
) -> list[LevelTrace]:
    """The level traces of ``source`` changed each way of ``changes``, in one decode (gain, noise, codec, loss).

    The recording is decoded block by block (at ``trace``'s rate); each
    block is changed each way and fed to that change's level computation,
    and only the levels are kept, so the memory is the traces', whatever
    the recording's length. Changes with the same encode share its sender
    (:func:`_link`): each bitrate is encoded once. ``seed`` is the
    recording's own (:func:`~clock.core.stress.recording_seed`): the noise
    and the lost packets. ``trace`` is the unchanged recording's (its
    cadence, metric and options; its frames are shared when the lengths
    agree). ``webrtc_int16`` reads 16-bit PCM as :func:`~clock.io.decode.iter_blocks` does with it (a 16-bit
    lossless capture).
    """
    rate = trace.sample_rate_hz
    todo = [_Change(line, value, seed) for line, value in changes]
    noise = PinkNoise(rate, seed=seed) if any(c.line.axis == "noise" for c in todo) else None
    links = sorted({c.link for c in todo if c.link is not None})
    senders = {k: OpusSender(rate, bitrate_kbps=k[0], dtx=k[1]) for k in links}
    streams = [LevelStream(rate, ticks=trace.ticks, metric=trace.metric, options=trace.options) for _ in todo]
    found = [_Levels(trace.n_ticks) for _ in todo]
    for block in iter_blocks(source, context_rate_hz=rate, webrtc_int16=webrtc_int16):
        unit = noise.take(block.size) if noise is not None else None
        sent = {k: (s, s.feed(block)) for k, s in senders.items()}
        for change, stream, out in zip(todo, streams, found):
            out.add(stream.feed(change.feed(block, unit, sent)))
    last = {k: (s, s.finish()) for k, s in senders.items()}
    traces = []
    for change, stream, out in zip(todo, streams, found):
        out.add(stream.feed(change.finish(last)) + stream.finish())
        level = out.level[: out.n]
        n = level.size
        frames = trace.frames if n == trace.n_ticks else trace.ticks.frames(np.arange(n, dtype=np.int64), rate)
        traces.append(replace(trace, frames=frames, level=level))
    return traces


class _Miss(Exception):
    """Not in the trace cache."""


def _kept(info: AudioInfo, trace: LevelTrace) -> Callable[[], tuple[AudioInfo, list[LevelTrace]]]:
    """What the trace cache keeps for a changed trace computed in a pass."""
    return lambda: (info, [trace])


class _Changed:
    """One recording's changed versions: traces computed in shared passes over its decode, kept only to be judged."""

    def __init__(self, task: _Task) -> None:
        self.task = task
        self.seed = recording_seed(task.seed, task.obs.name)
        self.passes = 0  # decodes made (for tests)

    @property
    def trace(self) -> LevelTrace:
        return self.task.obs.trace

    @property
    def webrtc_int16(self) -> bool:
        """The recording is a 16-bit lossless capture (read by Chromium's int16 rule)."""
        start = self.task.obs.events.start if self.task.obs.events is not None else None
        return bool(start is not None and start.webrtc_int16)

    def _params(self, line: Line, value: float) -> dict[str, Any]:
        t = self.trace
        seeded = line.axis in ("noise", "loss")
        params = {
            "stress": [line.axis, line.variant, value, self.seed if seeded else None, _MODEL],
            "ticks": [str(t.ticks.period_s), t.ticks.align],
            "metric": t.metric,
            "options": asdict(t.options),
        }
        if self.webrtc_int16:
            params["int16"] = "webrtc"
        return params

    def traces(self, wanted: Sequence[tuple[Line, float]]) -> list[LevelTrace]:
        """The changed traces of ``wanted`` (from the trace cache, the rest in one decode, then kept there)."""
        cache = self.task.cache
        found: dict[int, LevelTrace] = {}
        if cache is not None:
            for k, (line, value) in enumerate(wanted):

                def miss() -> tuple[AudioInfo, list[LevelTrace]]:
                    raise _Miss

                try:
                    found[k] = cache.traces(self.task.source, self._params(line, value), miss)[1][0]
                except _Miss:
                    pass
        todo = [k for k in range(len(wanted)) if k not in found]
        if todo:
            self.passes += 1
            made = changed_traces(
                self.task.source, self.trace, [wanted[k] for k in todo], seed=self.seed, webrtc_int16=self.webrtc_int16
            )
            info = probe(self.task.source) if cache is not None else None
            for k, trace in zip(todo, made):
                found[k] = trace
                if cache is not None and info is not None:
                    line, value = wanted[k]
                    cache.traces(self.task.source, self._params(line, value), _kept(info, trace))
        return [found[k] for k in range(len(wanted))]

    def stretched(self, line: Line, value: float, floor: float) -> tuple[Observation, Callable[[float], float]]:
        """The recording with its narration gaps (at ``floor``) stretched by ``value`` ms: no decoding."""
        obs = self.task.obs
        assert obs.events is not None
        extra = int(round(value / 1000.0 / self.trace.tick_s))
        trace, events, back = stretch_gaps(self.trace, obs.events, floor=floor, extra_ticks=extra)
        return replace(obs, trace=trace, events=events), back


class _Judged:
    """One setting on one recording: its unchanged replay, and the judge's first failing beat of a changed one.

    The judge sees a trace only through its speech, ``level > floor``
    (:func:`clock.core.analysis.analyse`, :func:`~clock.core.beats.beats`; the
    levels themselves only in a failing beat's reason): a changed trace with
    the speech, ticks and log of one that held, holds too, and is not
    replayed again (the recording as it is, and the last changed one that held).
    """

    def __init__(self, task: _Task, setting: Setting) -> None:
        _, self.floor, self.quiet, self.timeout = setting
        self.task = task
        assert task.obs.events is not None
        self.unchanged = self._judge(task.obs)
        self._before: Sequence[Beat] | None = None
        self._held: list[NDArray[np.uint8]] = [] if self.unchanged.tally.n_failed else [self._speech(task.obs.trace)]

    def _speech(self, trace: LevelTrace) -> NDArray[np.uint8]:
        return np.packbits(trace.level > self.floor)

    def _same_clock(self, obs: Observation) -> bool:
        """``obs`` has the unchanged recording's log and ticks (a sampled change: only its levels differ)."""
        a, b = obs.trace, self.task.obs.trace
        return obs.events is self.task.obs.events and (
            a.frames is b.frames or (a.sample_rate_hz == b.sample_rate_hz and np.array_equal(a.frames, b.frames))
        )

    def _judge(self, obs: Observation) -> CorpusOutcome:
        # Judged as every view judges it: by its own recording (P is its own longest narration pause, as the
        # change leaves it).
        assert obs.events is not None
        margins = self.task.margins
        return judge([obs], floor=self.floor, quiet_s=self.quiet, onset_timeout_s=self.timeout, margins=margins)

    def _beats(self, obs: Observation) -> Sequence[Beat]:
        assert obs.events is not None
        return beats(
            obs.trace,
            obs.events,
            floor=self.floor,
            quiet_s=self.quiet,
            onset_timeout_s=self.timeout,
        )

    def failure(self, obs: Observation, back: Callable[[float], float] | None = None) -> Failure | None:
        """The first beat of ``obs`` (a changed recording) that fails, as the judge gives it (None: it holds)."""
        speech = self._speech(obs.trace) if self._same_clock(obs) else None
        if speech is not None and any(np.array_equal(speech, h) for h in self._held):
            return None
        out = self._judge(obs)
        first = failure_of(out.unsatisfied[0]) if out.tally.n_failed else None
        u = self.unchanged.tally
        if out.tally.n_silent != u.n_silent or out.tally.n_beats != u.n_beats:
            if self._before is None:
                self._before = self._beats(self.task.obs)
            lost = lost_beat(obs.name, self._before, self._beats(obs), floor=self.floor)
            if lost is not None and (first is None or lost.beat < first.beat):
                first = lost
        if first is not None and back is not None:
            first = replace(first, t_s=back(first.t_s))
        if first is None and speech is not None:
            self._held[1:] = [speech]
        return first


def _plan(lines: Sequence[Line], at: dict[int, int], open_lines: Sequence[int], cap: int) -> list[tuple[int, int]]:
    """The values the next pass over a recording computes: ``(line, value index)``, each line's from ``at[line]``.

    The scan needs each open line's next value; how many more a pass computes
    weighs what a value costs against another pass over the decode. A codec
    value is an encode (:data:`CODEC_AHEAD` a pass); the loss values share
    one encode (all of them); a gain or noise value is a level computation,
    spread over the passes the open codec lines take anyway, else as many as
    the line has computed so far (at least :data:`FIRST_AHEAD`), so what it
    computes past its first failure is at most what it needed. At most
    ``cap`` values: the codec lines first (they set the number of passes),
    then the loss lines, then the rest, each line's in order.
    """
    left = {li: len(lines[li].values) - at[li] for li in open_lines}
    codec_passes = max((-(-left[li] // CODEC_AHEAD) for li in open_lines if lines[li].axis == "codec"), default=0)

    def ahead(li: int) -> int:
        axis = lines[li].axis
        if axis == "codec":
            return CODEC_AHEAD
        if axis == "loss":
            return left[li]
        return -(-left[li] // codec_passes) if codec_passes else max(FIRST_AHEAD, at[li])

    rank = {"codec": 0, "loss": 1}
    order = sorted(open_lines, key=lambda li: (rank.get(lines[li].axis, 2), li))
    return [(li, i) for li in order for i in range(at[li], at[li] + min(left[li], ahead(li)))][:cap]


def _stress_task(task: _Task) -> tuple[list[CorpusOutcome], list[list[_Found]], int]:
    """One recording: its unchanged outcome per setting, per setting and line its first failure, and its decodes.

    Scanned (:func:`_scan`), or read back from the results cache: the result
    is a function of the recording's content (it is decoded again, changed),
    its trace and log, the settings, lines, search, seed and margins, and
    the other recordings' ``P``, and is kept under all of them
    (:func:`clock.run.results.cached_result`, signed with the cache's key)
    when the recording did not change while it was read. A result read back
    made no decode.
    """
    cache = task.cache
    content = None if cache is None else cache.content_key(task.source)
    if cache is None or content is None:
        return _scan(task)
    made = [0]

    def scan() -> tuple[list[CorpusOutcome], list[list[_Found]]]:
        outcomes, found, made[0] = _scan(task)
        return outcomes, found

    params = {k: getattr(task, k) for k in ("settings", "lines", "search", "seed", "margins")}
    outcomes, found = cached_result(
        cache,
        "stress",
        [task.obs],
        scan,
        keep=lambda: cache.content_key(task.source) == content,
        content=content,
        model=_MODEL,
        **params,
    )
    return outcomes, found, made[0]


def _scan(task: _Task) -> tuple[list[CorpusOutcome], list[list[_Found]], int]:
    """One recording's stress task, computed (see :func:`_stress_task`).

    Every value of a line is replayed in order until the setting's first
    failure on it (the step scan of :func:`~clock.core.stress.first_failure`);
    the changed traces of the lines that need decoding are computed a few
    values of each open line per pass over the decode (:func:`_plan`), and
    shared by the settings.
    """
    changed = _Changed(task)
    judged = [_Judged(task, s) for s in task.settings]
    n_lines = len(task.lines)
    found: list[list[_Found | None]] = []
    for j in judged:
        if j.unchanged.tally.n_failed:
            first = failure_of(j.unchanged.unsatisfied[0])
            found.append([(UNCHANGED, first) for _ in task.lines])
        else:
            found.append([None] * n_lines)
    # Pause: the unchanged trace stretched, per setting (the gaps are the floor's).
    for li, line in enumerate(task.lines):
        if line.axis != "pause":
            continue
        for si, j in enumerate(judged):
            if found[si][li] is not None:
                continue

            def fails(i: int, j: _Judged = j, si: int = si, li: int = li, line: Line = line) -> bool:
                obs, back = changed.stretched(line, line.values[i], j.floor)
                f = j.failure(obs, back)
                if f is not None:
                    found[si][li] = (i, f)
                return f is not None

            if first_failure(len(line.values), fails, search=task.search) is None:
                found[si][li] = (None, None)
    # The rest: a step scan per line, a few values of every open line per decode.
    sampled = [li for li, line in enumerate(task.lines) if line.axis != "pause"]
    at = dict.fromkeys(sampled, 0)
    per_pass = max(1, min(MAX_JOBS_PER_PASS, PASS_TRACE_BYTES // max(1, 8 * changed.trace.n_ticks)))
    while True:
        open_lines = []
        for li in sampled:
            waiting = [si for si in range(len(judged)) if found[si][li] is None]
            if waiting and at[li] >= len(task.lines[li].values):
                for si in waiting:
                    found[si][li] = (None, None)
            elif waiting:
                open_lines.append(li)
        if not open_lines:
            break
        wanted = _plan(task.lines, at, open_lines, per_pass)
        traces = changed.traces([(task.lines[li], task.lines[li].values[i]) for li, i in wanted])
        traces.reverse()
        for li, i in wanted:
            obs = replace(task.obs, trace=traces.pop())  # each trace let go once judged
            for si, j in enumerate(judged):
                if found[si][li] is None:
                    f = j.failure(obs)
                    if f is not None:
                        found[si][li] = (i, f)
            at[li] = i + 1
    done = [[f if f is not None else (None, None) for f in row] for row in found]
    return [j.unchanged for j in judged], done, changed.passes


#: What a line's values cost, roughly, in level computations of the recording (an encode is about three).
_LINE_COST = {"gain": 1.0, "noise": 1.0, "codec": 4.0, "loss": 1.5, "pause": 0.1}


def _line_groups(lines: Sequence[Line]) -> list[list[int]]:
    """The lines, by the work their values share (indices into ``lines``; none empty).

    Gain and noise change the decoded samples (one decode and one noise
    serve both); codec ``dtx-off`` and loss share the 64 kb/s encode
    (:func:`_link`); codec ``dtx-on`` has encodes of its own; pause needs no
    decode.
    """
    kinds = ("samples", "link", "dtx-on", "pause")

    def kind(line: Line) -> str:
        if line.axis in ("gain", "noise"):
            return "samples"
        if line.axis == "loss" or (line.axis == "codec" and line.variant != "dtx-on"):
            return "link"
        return "dtx-on" if line.axis == "codec" else "pause"

    groups = [[li for li, line in enumerate(lines) if kind(line) == k] for k in kinds]
    return [g for g in groups if g]


def _run_tasks(
    tasks: Sequence[_Task], workers: Workers, progress: Callable[[int], None] | None
) -> list[tuple[list[CorpusOutcome], list[list[_Found]], int]]:
    """Each recording's task run where ``workers`` says; its lines split into groups when one would hold up the pool.

    A recording's lines share each pass over its decode, so a task per
    recording costs least. But when one recording's work is more than a
    worker's share of the whole (a long recording beside short ones, or
    fewer recordings than workers), it would keep one worker busy while the
    others wait: then each recording's lines are split by
    :func:`_line_groups` (each group still shares its own passes, at the
    cost of a decode of its own) and the tasks go out most costly first.
    The lines' results do not depend on how they are grouped (each line is
    scanned on its own), so the result is a serial run's; a recording's
    warnings and first error come in corpus order, and its ``progress``
    once all its groups are done.
    """
    n_workers = workers.size
    parts: list[tuple[int, list[int]]] = []  # (recording, the line indices of one group)
    for r, task in enumerate(tasks):
        parts += [(r, group) for group in _line_groups(task.lines)] or [(r, [])]

    def cost(part: tuple[int, list[int]]) -> float:
        r, group = part
        per_value = sum(_LINE_COST[tasks[r].lines[li].axis] * len(tasks[r].lines[li].values) for li in group)
        return (1.0 + per_value) * tasks[r].obs.trace.n_ticks

    each = [sum(cost(p) for p in parts if p[0] == r) for r in range(len(tasks))]
    if n_workers == 1 or not tasks or (n_workers is not None and max(each) <= sum(each) / n_workers):
        return run_ordered(_stress_task, list(tasks), workers=workers, progress=progress)
    order = sorted(range(len(parts)), key=lambda k: -cost(parts[k]))  # stable: ties in corpus order
    split = [
        replace(tasks[parts[k][0]], lines=tuple(tasks[parts[k][0]].lines[li] for li in parts[k][1])) for k in order
    ]
    left = [sum(1 for r, _ in parts if r == i) for i in range(len(tasks))]

    def finished(j: int) -> None:
        r = parts[order[j]][0]
        left[r] -= 1
        if not left[r] and progress is not None:
            progress(r)

    # Each task's error and warnings kept (quietly), to be shown in corpus order below.
    got = run_ordered(partial(quietly, _stress_task), split, workers=workers, progress=finished)
    by_part = {order[j]: result for j, result in enumerate(got)}
    out = []
    for r, task in enumerate(tasks):
        # A recording's warnings (once each) and its first error, in corpus order: as a serial run gives them.
        mine = [(parts[k][1], by_part[k]) for k in range(len(parts)) if parts[k][0] == r]
        for message in dict.fromkeys(m for _, done in mine for m in done.messages):
            warnings.warn(message, SpeechClockWarning, stacklevel=3)
        error = next((done.error for _, done in mine if done.error is not None), None)
        if error is not None:
            raise error
        results = [(group, done.result) for group, done in mine if done.result is not None]
        outcomes = results[0][1][0]  # the unchanged replay: the same in every group
        found: list[list[_Found]] = [[(None, None)] * len(task.lines) for _ in task.settings]
        for group, (_, part_found, _) in results:
            for k, row in enumerate(part_found):
                for li, f in zip(group, row):
                    found[k][li] = f
        out.append((outcomes, found, sum(result[2] for _, result in results)))
    return out


def _sum_outcomes(outcomes: Sequence[CorpusOutcome]) -> CorpusOutcome:
    """Per-recording outcomes added up as one corpus's (every count summed, the failing beats in order)."""
    return CorpusOutcome(
        n_recordings=sum(o.n_recordings for o in outcomes),
        tally=sum((o.tally for o in outcomes), Tally.of((), extra=(UNHEARD_SPEECH,))),
        unsatisfied=tuple(x for o in outcomes for x in o.unsatisfied),
        # The corpus's P: the longest.
        narration_pause_s=max((o.narration_pause_s for o in outcomes if o.narration_pause_s is not None), default=None),
    )


def stress_observations(
    sources: Sequence[Any],
    observations: Sequence[Observation],
    settings: Sequence[Setting],
    *,
    axes: Sequence[str] = AXES,
    search: str = "step",
    seed: int = 0,
    margins: Margins | None = None,
    workers: Workers | None = None,
    progress: Callable[[int], None] | None = None,
    cache: TraceCache | None = None,
) -> StressResult:
    """The margins of each setting over recordings (``sources[i]`` is where ``observations[i]`` is decoded from).

    Recordings without beats are left out. ``progress`` is called with each
    replayed recording's index (among those with beats) as it finishes.
    ``cache`` keeps the changed recordings' level traces (keyed by the
    recording's content, the change and its seed): a second run decodes
    nothing.
    """
    pairs = [(s, o) for s, o in zip(sources, observations) if o.has_beats]
    tick_s = pairs[0][1].trace.tick_s if pairs else 1 / 60
    todo_lines = axis_lines(tick_s=tick_s, axes=axes) if pairs else ()  # nothing to replay: no margin to claim
    tasks = [_Task(s, o, tuple(settings), todo_lines, search, seed, margins or Margins(), cache) for s, o in pairs]
    done = _run_tasks(tasks, workers or Workers(), progress)
    out = []
    for k, (label, floor, quiet, timeout) in enumerate(settings):
        per_rec: list[tuple[LineMargin, ...]] = []
        for _, found, _ in done:
            per_rec.append(tuple(line_margin(line, i, f) for line, (i, f) in zip(todo_lines, found[k])))
        margins_k = tuple(combine(line, [found[k][j] for _, found, _ in done]) for j, line in enumerate(todo_lines))
        unchanged = _sum_outcomes([outcomes[k] for outcomes, _, _ in done])
        out.append(SettingStress(label, floor, quiet, timeout, unchanged, margins_k, tuple(per_rec)))
    return StressResult(tuple(o.name for _, o in pairs), tuple(out), search, seed)


def stress(
    corpus: Any,
    *,
    settings: Sequence[Setting] | None = None,
    axes: Sequence[str] = AXES,
    search: str = "step",
    seed: int = 0,
    jobs: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int], None] | None = None,
    cache: TraceCache | str | os.PathLike[str] | bool | None = True,
) -> StressResult:
    """How far each setting holds as the corpus changes: a quieter voice, a noisier room, a codec, lost packets.

    Parameters
    ----------
    corpus : Corpus
        From :func:`clock.load_corpus`.
    settings : sequence of (label, floor, quiet_s, onset_timeout_s), optional
        Default: the config's committed setting and derive's recommendation.
    axes : sequence of str
        Some of ``gain``, ``noise``, ``codec``, ``loss``, ``pause``.
    search : {"step", "bisect"}
        Both scan every value of a line in order (see :func:`clock.core.stress.first_failure`).
    seed : int
        Seeds the noise and the lost packets (with each recording's name).
    jobs, scheduler :
        Where the recordings are replayed (see :class:`~clock.run.workers.Workers`).
    progress : callable, optional
        Called with each recording's index as it finishes.
    cache : TraceCache, path-like, bool or None
        Where the changed recordings' level traces are kept (as
        :func:`clock.load_corpus` takes it; True: the user's cache folder).

    Examples
    --------
    >>> corpus = clock.load_corpus(["recordings"])   # doctest: +SKIP
    >>> result = clock.stress(corpus, axes=["gain"])  # doctest: +SKIP
    >>> result.settings[0].margins[0].holds_to       # doctest: +SKIP
    -7.0
    """
    obs = list(corpus.observations)
    cfg = corpus.config
    if settings is None:
        settings = settings_for(obs, cfg.thresholds, margins=cfg.margins)
    return stress_observations(
        [r.info.path for r in corpus.recordings],
        obs,
        settings,
        axes=axes,
        search=search,
        seed=seed,
        margins=cfg.margins,
        workers=Workers(jobs=jobs, scheduler=scheduler),
        progress=progress,
        cache=usable_cache(cache, scheduler),
    )


def robustness_results(
    corpus: Any,
    *,
    config: Any = None,
    label: str = "committed",
    jobs: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int], None] | None = None,
    cache: TraceCache | str | os.PathLike[str] | bool | None = True,
) -> list[CheckResult]:
    """``check``'s results for the config's ``[robustness]`` table (none without one).

    Each recording with beats is changed along the lines the table names and
    replayed at the config's setting (:func:`stress_observations`); one
    check per recording and line (:func:`clock.core.stress.robustness_checks`).

    Parameters
    ----------
    corpus : Corpus
        From :func:`clock.load_corpus`.
    config : Config, optional
        Its thresholds, margins and ``[robustness]`` table [default: the corpus's].
    label : str
        What the setting is (``committed``, ``candidate``), as the results cache keeps it.
    jobs, scheduler, progress, cache :
        As :func:`stress` takes them.
    """
    cfg = corpus.config if config is None else config
    if not cfg.robustness:
        return []
    th = cfg.thresholds
    result = stress_observations(
        [r.info.path for r in corpus.recordings],
        list(corpus.observations),
        [(label, th.floor, th.quiet_s, th.onset_timeout_s)],
        axes=robustness_axes(cfg.robustness),
        margins=cfg.margins,
        workers=Workers(jobs=jobs, scheduler=scheduler),
        progress=progress,
        cache=usable_cache(cache, scheduler),
    )
    names = [o.name for o in corpus.observations]
    return robustness_checks(result.settings[0], result.recordings, cfg.robustness, all_names=names)


def usable_cache(
    spec: TraceCache | str | os.PathLike[str] | bool | None, scheduler: str | None = None
) -> TraceCache | None:
    """The trace cache the tasks use: none on a remote Dask cluster (its folder is this machine's), or unwritable."""
    if scheduler is not None and not scheduler.startswith("local"):
        return None
    found = resolve_cache(spec)
    return found if found is not None and found.writable() else None


def robust_preference(
    sources: Sequence[Any],
    observations: Sequence[Observation],
    *,
    axes: Sequence[str] = AXES,
    seed: int = 0,
    margins: Margins | None = None,
    workers: Workers | None = None,
    progress: Callable[[int], None] | None = None,
    cache: TraceCache | None = None,
) -> Callable[[list[tuple[float, float, float]]], tuple[int, str]]:
    """``derive(prefer=...)`` for ``--prefer robust``: the setting with the widest smallest margin.

    Every setting that replays right is stressed (in one pass over the
    recordings); the one whose smallest share of a line held
    (:func:`~clock.core.stress.robust_score`) is largest wins, the first
    (nearest the evidence's floor) on a tie; the note names the line that
    limits it.
    """

    def prefer(candidates: list[tuple[float, float, float | None]]) -> tuple[int, str]:
        # A candidate without a quiet time or a timeout (nothing to recommend for it) cannot be replayed.
        whole = [k for k, (_, q, t) in enumerate(candidates) if q is not None and t is not None]
        if not whole:
            return 0, (
                "not preferred for robustness: none of the settings that replay right has both a quiet time "
                "and an onset timeout to replay changed"
            )
        settings = [(f"floor {candidates[k][0]:g}", *candidates[k]) for k in whole]
        result = stress_observations(
            sources,
            observations,
            settings,  # type: ignore[arg-type]
            axes=axes,
            seed=seed,
            margins=margins,
            workers=workers,
            progress=progress,
            cache=cache,
        )
        scores = [robust_score(s) for s in result.settings]
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        lim = result.settings[best].limiting
        held = "every line holds over its whole range"
        if lim is not None and lim.first_failure is not None:
            held = f"{lim.margin_fraction:.0%} of its {lim.name} line holds, the least of its lines: {margin_line(lim)}"
        of = f"the {len(whole)} settings that replay right"
        if len(whole) < len(candidates):
            of += f" (of {len(candidates)}; the others lack a quiet time or a timeout)"
        note = f"preferred for robustness: of {of}, its smallest margin is the widest ({held})"
        return whole[best], note

    return prefer  # type: ignore[return-value]
