"""What derive says of recordings without a window of floors, and what ``check`` will make of their level checks.

Pure numpy.
"""

from __future__ import annotations

from ..beats import beats, failing_beats, heard
from .corpus import Corpus, Setting
from .evidence import Outcome
from .floors import db
from .replay import level_failures
from .windows import NOISE_PERCENTILE, recording_levels


def no_window_words(corpus: Corpus, i: int) -> str:
    """What puts a recording's noise (p99) within the margin of its speech, in words: its room, or a quieter
    voice the level split takes for silence (:meth:`clock.core.recommend.corpus.Corpus.quiet_voice`)."""
    rec, margins = corpus.levels[i], corpus.margins
    noise_db, speech_db = db(rec.noise_high or 0.0), db(rec.speech_low or 0.0)
    speech = f"its speech (p{margins.speech_percentile:g} {speech_db:.1f} dBFS)"
    within = f"within {margins.floor_margin_db:g} dB of {speech}"
    quiet = corpus.quiet_voice(i)
    if quiet is None:
        return f"its noise (p{NOISE_PERCENTILE:g} {noise_db:.1f} dBFS) reaches {within}"
    found, without, _ = quiet
    several = len(found) > 1
    rest = "exact zero" if without == 0 else f"{db(without):.1f} dBFS"
    return (
        f"the level split takes quieter speech in beat{'s' * several} {', '.join(str(j + 1) for j in found)} "
        f"(heard above its room) for silence, which puts its silence's p{NOISE_PERCENTILE:g} ({noise_db:.1f} dBFS; "
        f"{rest} without {'them' if several else 'it'}) {within}"
    )


def rescued_note(corpus: Corpus, i: int, floor: float) -> str:
    """Why a recording without a window of floors is still served by the floor, and which check will say so."""
    rec, margins = corpus.levels[i], corpus.margins
    fails = []
    if rec.noise_high is not None and rec.noise_high >= floor:
        fails.append("noise level")
    if rec.speech_low is not None and rec.speech_low < floor * 10 ** (margins.floor_margin_db / 20):
        fails.append("speech level")
    noise = corpus.quiet_voice(i) is None and rec.noise_high is not None and rec.noise_high < floor
    return (
        f"{corpus.obs[i].name}: {no_window_words(corpus, i)}, yet the floor {floor:g} "
        f"{'stands above its noise and ' if noise else ''}still ends its beats right in the replay"
        + (CHECK.format(" and ".join(fails)) if fails else "")
    )


def recording_ends_right(corpus: Corpus, members: list[int], i: int, setting: Setting) -> bool:
    """Whether a setting ends every beat of recording ``i`` right, judged with ``members`` (their ``P``): no
    failure, and every beat the guide spoke in heard."""
    if setting.quiet_s is None or setting.onset_timeout_s is None or not corpus.obs[i].has_beats:
        return False
    a = corpus.analysis(i, setting.floor)
    failing = failing_beats(a, quiets_s=[setting.quiet_s], onset_timeout_s=setting.onset_timeout_s)
    return not failing[0] and corpus.speech_unheard(i, a).size == 0


#: Where a note says what ``check`` will make of a level check; settled by the replay once it is known.
CHECK = " (check: its {})"


def settle_checks(
    notes: list[str], corpus: Corpus, members: list[int], setting: Setting | None, outcome: Outcome | None
) -> list[str]:
    """What ``check`` says of a note's level checks: it fails one only when the replay fails a beat there.

    The beats are those :func:`clock.core.recommend.replay.level_failures` names, as ``check`` finds them. A
    recording without beats has no replay: there the percentile decides, and ``check`` fails it.
    """
    by_name = {corpus.obs[i].name: i for i in members}
    out = []
    for note in notes:
        if " (check: its " not in note or not note.endswith(")"):
            out.append(note)
            continue
        name = note.split(": ", 1)[0]
        head, what = note[: note.rindex(" (check: its ")], note[note.rindex(" (check: its ") + 13 : -1]
        i = by_name.get(name)
        o = None if i is None else corpus.obs[i]
        failing = []
        if o is not None and o.has_beats and outcome is not None and setting is not None:
            assert o.events is not None and setting.quiet_s is not None and setting.onset_timeout_s is not None
            found = beats(
                o.trace,
                o.events,
                floor=setting.floor,
                quiet_s=setting.quiet_s,
                onset_timeout_s=setting.onset_timeout_s,
            )
            _, classes = recording_levels(o, corpus.margins)
            failing = level_failures(o, classes.speech, heard(found))
        if o is None or not o.has_beats:
            out.append(f"{head} (check will fail its {what}: without beats to replay, the percentile decides)")
        elif outcome is None:
            out.append(f"{head} (check decides its {what} by the replay of its beats)")
        elif failing:
            b = failing[0]
            out.append(f"{head} (check will fail its {what}: beat {b.index + 1} {b.outcome})")
        else:
            out.append(f"{head} (check passes its {what} with a note: the replay ends every beat of it right)")
    return out
