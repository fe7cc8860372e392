"""What derive says of recordings without a window of floors, and what ``check`` will make of their level checks.

Pure numpy.
"""

from __future__ import annotations

from ..beats import beats, heard
from ..decide import failing_beats
from .corpus import Corpus, Setting
from .evidence import THIN, CorpusOutcome, counted
from .floor_math import db
from .replay import floor_that_works, level_failures
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
    notes: list[str], corpus: Corpus, members: list[int], setting: Setting | None, outcome: CorpusOutcome | None
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


def no_window_notes(
    corpus: Corpus, members: list[int], chosen: Setting | None, rescued: list[int], *, replay: bool
) -> list[str]:
    """What derive says of each recording without a window of floors: served by the floor anyway, or (with
    ``replay``, where it has beats) whether a ladder replayed over it alone finds a floor, or its verdict."""
    obs, levels = corpus.obs, corpus.levels
    notes = []
    for i in members:
        rec = levels[i]
        if rec.window is not None or not rec.verdict:
            continue
        if chosen is not None and (i in rescued or recording_ends_right(corpus, members, i, chosen)):
            notes.append(rescued_note(corpus, i, chosen.floor))
        elif replay and obs[i].has_beats and rec.speech_low is not None:
            # "Cannot work" is the replay's to say: a ladder of floors over this recording alone.
            works = floor_that_works(obs[i], spoke=corpus.spoke(i).tolist())
            if works is None:
                notes.append(
                    f"{obs[i].name}: {no_window_words(corpus, i)}; no replayed floor ends every beat of it right, so a "
                    "level-floor clock cannot work on it; it contributes no gap or quiet-time evidence"
                )
            else:
                notes.append(
                    f"{obs[i].name}: {no_window_words(corpus, i)}; alone, the replay at floor {works[0]:.2g} ends its "
                    f"beats right (a quiet time above {works[1]:.2f} s), but no replayed floor does for it and the "
                    "others together; it contributes no gap or quiet-time evidence"
                )
        else:
            notes.append(f"{obs[i].name}: {rec.verdict}")
    return notes


def outside_notes(corpus: Corpus, windowed: list[int], meeting: list[int], floor: float | None) -> list[str]:
    """What derive says of each recording whose window does not meet the others' or does not hold the floor, and
    which level check that puts at stake."""
    notes = []
    for i in windowed:
        lo_w, hi_w = corpus.levels[i].window  # type: ignore[misc]
        name = corpus.obs[i].name
        if floor is None or lo_w < floor < hi_w:
            if i not in meeting:
                notes.append(f"{name}: its window of floors ({lo_w:.4g} .. {hi_w:.4g}) does not meet the others'")
            continue
        if floor >= hi_w:
            notes.append(
                f"{name}: its window of floors ({lo_w:.4g} .. {hi_w:.4g}) does not meet the others'; the floor "
                f"{floor:g} is {db(floor) - db(hi_w):.1f} dB above its speech edge, so its quietest speech is under "
                "the floor" + CHECK.format("speech level")
            )
        else:
            notes.append(
                f"{name}: its window of floors ({lo_w:.4g} .. {hi_w:.4g}) does not meet the others'; its noise "
                f"(p{NOISE_PERCENTILE:g} {lo_w:.4g}) reaches the floor {floor:g}" + CHECK.format("noise level")
            )
    return notes


def thin_notes(n_gaps: int, n_beats: int, n_recordings: int) -> list[str]:
    """Where the evidence is thin: fewer gaps, beats or recordings than ``THIN`` asks for."""
    return [
        f"thin evidence: {counted(n, what)} (fewer than {need})"
        for what, n, need in (
            ("gaps", n_gaps, THIN["gaps"]),
            ("beats", n_beats, THIN["beats"]),
            ("recordings", n_recordings, THIN["recordings"]),
        )
        if n < need
    ]


def log_notes(corpus: Corpus, members: list[int], judged: list[int]) -> list[str]:
    """What derive says of event logs: one without a terminal response has no beats, and the recordings judged
    without a log have all their gaps counted."""
    obs, notes = corpus.obs, []
    for i in members:
        o = obs[i]
        if o.events is not None and not o.events.terminals:
            has_prompts = bool(o.events.of_kind("prompt"))
            notes.append(
                f"{o.name}: its event log has {'prompts but ' if has_prompts else ''}no terminal response, "
                "so it has no beats and contributes no narration gaps"
            )
    unlogged = tuple(obs[i].name for i in judged if obs[i].events is None)
    if unlogged:
        notes.append(
            f"no event log for {counted(len(unlogged), 'recordings')} ({', '.join(unlogged[:3])}"
            f"{', ...' if len(unlogged) > 3 else ''}): all their gaps were counted as narration gaps"
        )
    return notes
