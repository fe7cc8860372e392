"""A figure of a synthetic tour, for plot tests."""

from __future__ import annotations

from sessions import RATE, Session

from clock.core.beats import beats
from clock.core.events import Event, EventLog
from clock.core.levels import levels
from clock.core.replay import replay_ticks
from clock.core.segments import segments
from clock.report.plot import plot_recording


def tour_figure():
    s = Session(12.0).say(0.3, 1.2).say(1.6, 2.6).say(3.0, 4.0).say(5.0, 6.0)
    log = EventLog((Event("prompt", "prompt", 0.2), Event("terminal", "terminal_response", 1.0)))
    trace = levels(s.samples(), RATE)
    seg = segments(trace, floor=0.003)
    found = beats(trace, log, floor=0.003, quiet_s=2.5)
    fig = plot_recording(
        trace,
        floor=0.003,
        segmentation=seg,
        events=log,
        beats=found,
        replay=replay_ticks(trace, log, floor=0.003, quiet_s=2.5),
        envelope=None,
        quiet_s=2.5,
        label_gaps_s=0.3,
    )
    return fig, trace, seg
