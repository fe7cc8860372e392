"""``speechclock derive``: recommend the floor, quiet time and onset timeout from recordings, with the evidence.

The command derives per group of recordings (:func:`clock.api.derive`, read back from the results cache where
unchanged) and writes the recommendation as a table, JSON, Markdown, a speechclock.toml or speechclock.js's
configuration, with the evidence figure.
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from ..api import PREFERENCES
from ..api import derive as derive_thresholds
from ..core.beats import beats as find_beats
from ..core.model import MARGIN_BOUNDS, Observation
from ..core.recommend.evidence import Derivation
from ..core.recommend.rule_choice import GROUP_KEYS
from ..core.thresholds import LEVEL, Thresholds, check_bounded
from ..errors import InvalidParameterError
from ..io.config import Config
from ..io.output import atomic_output, json_text
from ..io.terminal import printable
from ..report.text import (
    derive_dict,
    derive_markdown,
    derive_text,
    unused_lines,
)
from ..run.corpus import Corpus
from .options import (
    TIME,
    CorpusArgs,
    OutputPath,
    candidate_options,
    corpus_options,
    library_check,
    load_corpus,
    output_option,
    with_candidate,
)
from .shared import save_figure_file


@click.command()
@corpus_options
@candidate_options
@click.option("--by", metavar="KEY", help="Derive per value of a metadata key in the config (e.g. voice).")
@click.option(
    "--min-saving",
    "min_saving_s",
    type=TIME,
    metavar="S",
    callback=library_check(lambda v: check_bounded(v, "the saving", 0.0, MARGIN_BOUNDS["min_saving_s"][0], " s")),
    help="Name a rule on the provider's event only where it saves at least this much median dead air against the "
    "level clock, at the recommended and the committed setting (default: [margins] min_saving_s, 0.3 s).",
)
@click.option(
    "--prefer",
    type=click.Choice(PREFERENCES),
    default="evidence",
    show_default=True,
    help="robust: among the settings that replay right, the one with the widest smallest margin "
    "(speechclock stress), naming the axis that limits it.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "markdown", "js", "toml"]),
    default="table",
    show_default=True,
    help="js: the recommendation as speechclock.js's configuration (docs/clock.md); toml: as a speechclock.toml "
    "for these recordings (each one's beat count; log = false, beats = 0 or speech = false where it has none), "
    "to review and commit (-o FILE never replaces an existing config).",
)
@click.option(
    "--plot",
    "plot_path",
    type=OutputPath(),
    help="Also save the evidence figure (levels and windows per recording, narration gaps) as .png, .svg or .pdf.",
)
@output_option
def derive(
    corpus_args: CorpusArgs,
    by: str | None,
    min_saving_s: float | None,
    prefer: str,
    fmt: str,
    plot_path: Path | None,
    output: Path | None,
    **opts: Any,
) -> None:
    """Recommend the floor, quiet time and onset timeout from RECORDINGS, with the evidence.

    RECORDINGS are files, folders (every recording in them) or a
    speechclock.toml (its folder). Labels (NAME.labels.txt) and event logs
    (NAME.events.jsonl) beside each recording are used when present. The
    committed setting (or a candidate given with --floor, --quiet-time,
    --onset-timeout) is replayed beside the recommendation.
    """
    toml_output = fmt == "toml" and output is not None and os.fspath(output) != "-"
    _never_replaced(output if toml_output else None)
    outputs = {"-o": None if toml_output else output, "--plot": plot_path}  # a new config is its own check
    corpus = load_corpus(corpus_args, outputs=outputs)
    obs = list(corpus.observations)
    cfg, label = with_candidate(corpus.config, opts)
    if min_saving_s is not None:
        cfg = replace(cfg, margins=replace(cfg.margins, min_saving_s=min_saving_s))
    compare = cfg.thresholds if label != "built-in defaults" else None
    found = _derive_groups(
        corpus, cfg, _groups(obs, by), by=by, compare=compare, label=label, prefer=prefer, jobs=corpus_args.jobs
    )
    committed = corpus.config.thresholds if corpus.config.path is not None else None
    if plot_path is not None:
        from ..report.plot import plot_evidence

        drawn = None if compare is None else compare.floor
        figure = plot_evidence(found[0], committed_floor=drawn, committed_label=label)
        save_figure_file(figure, plot_path, corpus.inputs, "--plot")
    if fmt == "js":
        _write_page_config(found[0], cfg.thresholds, corpus_args.recordings, output, corpus.inputs)
        return
    if fmt == "toml":
        _write_config(found[0], cfg, obs, corpus_args.recordings, output, corpus.inputs)
        return
    # What could not be used leads the text (a folder without logs is not a quiet time measured).
    lead = unused_lines(obs, found[0])
    with atomic_output(output, inputs=corpus.inputs) as out:
        if fmt == "json":
            out.write(json_text(derive_dict(found, committed)))
        elif fmt == "markdown":
            quoted = "".join(f"> **{line}**\n" for line in lead) + ("\n" if lead else "")
            out.write(printable(quoted + derive_markdown(found)))
        else:
            out.write(printable("".join(line + "\n" for line in lead) + derive_text(found)))


def _groups(obs: list[Observation], by: str | None) -> dict[str, list[Observation]]:
    """The recordings derived together: ``all``, then with ``--by KEY`` one group per value of the key."""
    groups: dict[str, list[Observation]] = {"all": obs}
    if by:
        known = sorted({key for o in obs for key in o.meta})
        if not any(by in o.meta for o in obs):
            raise click.BadParameter(
                f"no recording has the key {by!r} (known: {', '.join(known) or 'none'}; keys come from the "
                "config's [recordings.\"NAME\"] tables and the logs' session lines)",
                param_hint="'--by'",
            )
        for o in obs:
            groups.setdefault(f"{by}={o.meta.get(by, '(none)')}", []).append(o)
    return groups


def _derive_groups(
    corpus: Corpus,
    cfg: Config,
    groups: dict[str, list[Observation]],
    *,
    by: str | None,
    compare: Thresholds | None,
    label: str,
    prefer: str,
    jobs: int,
) -> list[Derivation]:
    """Each group's derivation, read back from the results cache where one is kept for unchanged recordings."""
    keys = tuple(dict.fromkeys(((by,) if by else ()) + GROUP_KEYS))
    # A derivation of unchanged recordings is the same every time: with a cache, read it back (its
    # leave-one-out runs are most of a cached run's time). --prefer robust depends on the audio itself (stress
    # decodes it again, changed): it is derived, from each recording's stress result, kept by content.
    from ..run.cache import resolve_cache
    from ..run.results import cached_result
    from .scale import scale_settings

    scheduler, cache = scale_settings()
    results = None if prefer == "robust" else resolve_cache(cache)
    where = {id(o): r.info.path for r, o in zip(corpus.recordings, corpus.observations)}

    def derived(members: list[Observation], name: str) -> Derivation:
        return derive_thresholds(
            members,
            margins=cfg.margins,
            group=name,
            compare=compare,
            compare_label=label,
            prefer=prefer,
            group_keys=keys,
            committed=corpus.config.thresholds,
            sources=[where[id(o)] for o in members],
            jobs=jobs,
            scheduler=scheduler,
            cache=cache,
        )

    return [
        cached_result(
            results,
            "derive",
            members,
            functools.partial(derived, members, name),
            margins=cfg.margins,
            group=name,
            compare=compare,
            compare_label=label,
            group_keys=keys,
            committed=corpus.config.thresholds,
        )
        for name, members in groups.items()
    ]


def _recommended(found: Derivation, thresholds: Thresholds, what: str) -> Thresholds:
    """The recommended thresholds (the rest as committed), or the error that nothing is recommended."""
    floor, quiet_s, timeout_s = found.setting
    if floor is None or quiet_s is None:
        # Writing nothing where a config was asked for is an error (exit 2), said as the table says it.
        if floor is None:
            why = f"no floor recommended ({found.floor.rule})"
        else:
            why = f"no quiet time recommended ({found.gaps.rule or 'no gap inside a beat'})"
        raise InvalidParameterError(f"--format {what}: nothing to write, {why}")
    return thresholds.with_(floor=floor, quiet_s=quiet_s, onset_timeout_s=timeout_s)


def _never_replaced(output: Path | None) -> None:
    """``derive --format toml`` writes a new file only: an existing file (or a link) at ``output`` is an error.

    Standard output (``-``, ``/dev/stdout``) and other devices are written through as for every output.
    """
    if output is None or os.fspath(output) == "-" or os.fspath(output).startswith("/dev/"):
        return
    if os.path.isfile(output) or os.path.islink(output):
        raise InvalidParameterError(f"{output}: exists; derive --format toml never replaces a file (give a new name)")


def _write_config(
    found: Derivation, cfg: Any, obs: list[Observation], recordings: tuple[Path, ...], output: Path | None, inputs: Any
) -> None:
    """``derive --format toml``: a speechclock.toml for these recordings, at the recommendation.

    Each recording's entry keeps the config's keys and adds its beat count at the recommended setting, or
    ``log = false`` (no event log), ``beats = 0`` (no terminal response) and ``speech = false`` (no speech), so
    that ``check`` with it holds each recording to what it has.
    """
    from ..io.config import config_toml

    th = _recommended(found, cfg.thresholds, "toml")
    no_speech = {r.name for r in found.floor.recordings if r.speech_low is None}
    entries: dict[str, dict[str, Any]] = {}
    for o in obs:
        entry = dict(cfg.meta(o.name))
        if o.events is None:
            entry["log"] = False
        elif not o.events.terminals:
            entry["beats"] = 0
        else:
            found_beats = find_beats(
                o.trace, o.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
            )
            entry["beats"] = len(found_beats)
        if o.name in no_speech:
            entry["speech"] = False
        entries[o.name] = entry
    text = config_toml(th, cfg.margins, entries, source="derive " + " ".join(str(r) for r in recordings))
    _never_replaced(output)  # made meanwhile
    with atomic_output(output, inputs=inputs, allow=("config",)) as out:
        out.write(printable(text))


def _write_page_config(
    found: Derivation, thresholds: Thresholds, recordings: tuple[Path, ...], output: Path | None, inputs: Any
) -> None:
    """``derive --format js``: the recommendation (the rest of the config as committed) for speechclock.js.

    Where derive recommends a rule that uses the provider's event (``Derivation.rules``), the config also
    carries ``rule`` and ``hangover_s`` (docs/clock.md); with the level clock it has only the thresholds.
    """
    from ..web import page_config_js

    # Only a rule derive recommended is written (never the committed one): without it, the level clock.
    th = replace(_recommended(found, thresholds, "js"), rule=LEVEL, hangover_s=None)
    source = "derive " + " ".join(str(r) for r in recordings)
    saving = found.rules.saving if found.rules is not None else None
    text = page_config_js(th, source=source, rule=None if saving is None else saving.rule)
    with atomic_output(output, inputs=inputs) as out:
        out.write(text)
