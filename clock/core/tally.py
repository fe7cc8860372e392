"""One tally of outcomes: how many beats ended each way, counted once from outcome codes.

Pure numpy. Every view that counts a replay's outcomes holds one: derive's
replay of a setting (:class:`clock.core.recommend.evidence.CorpusOutcome`),
a rule's (:class:`clock.core.recommend.rules.RuleResult`), a sweep's settings
(:class:`clock.core.sweep.SweepPoint`) and an endpointer's
(:class:`clock.core.compare.EndpointerResult`). A tally holds a count per
outcome of :data:`clock.core.outcome.OUTCOMES`, then per failure a view adds
(derive's ``unheard speech``: a beat the guide spoke in that the floor does
not hear; a rule's ``no-event``: a beat without the provider's event the rule
needs), and which of them are failures (:data:`clock.core.outcome.FAILURES`,
and the ones added). Its counts are read by name (``tally.n_ok``), and
``n_beats`` and ``n_failed`` are defined here once for every view.

A view's output (JSON, CSV, a DataFrame row) spells its tally out as count
fields among its own, in the order its ``RECORD`` names them: :func:`record`
makes that dict for every serializer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .outcome import (
    ABORTED,
    FAILURES,
    MISSED_ONSET,
    OK,
    OUTCOMES,
    OUTPACED,
    PREMATURE,
    RECORDING_ENDED,
    SILENT,
    STALLED,
    SUPERSEDED,
    UNHEARD,
)

__all__ = ["NO_EVENT", "UNHEARD_SPEECH", "Tally", "field_name", "record", "tally_by_setting"]

#: A beat the guide spoke in (as derive tells speech without the floor) that the floor does not hear: derive's
#: failure of the floor.
UNHEARD_SPEECH = "unheard speech"
#: A beat with speech without the provider's event that a rule needs: the rule's failure.
NO_EVENT = "no-event"
#: The result field of a kind whose name does not say it.
_FIELDS = {UNHEARD_SPEECH: "n_speech_unheard"}


def field_name(kind: str) -> str:
    """The result field counting ``kind``: ``n_missed_onset`` for ``missed-onset``, ``n_speech_unheard`` for
    ``unheard speech``."""
    return _FIELDS.get(kind, "n_" + kind.replace("-", "_").replace(" ", "_"))


class _Count:
    """A tally's count of one kind, read as an attribute (``tally.n_ok``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __get__(self, tally: Any, owner: Any = None) -> int:
        """The count of this kind in ``tally``."""
        return int(tally[self.kind])


@dataclass(frozen=True, slots=True)
class Tally:
    """How many beats ended each way.

    Attributes
    ----------
    counts : tuple of int
        One per kind of ``kinds``.
    kinds : tuple of str
        :data:`clock.core.outcome.OUTCOMES`, then the failures a view adds.
    failures : tuple of str
        The kinds that are failures.
    n_ok, n_premature, n_stalled, n_outpaced, n_missed_onset, n_silent, n_unheard, n_aborted : int
    n_superseded, n_recording_ended, n_speech_unheard, n_no_event : int
        The count of each kind (0 for a kind this tally does not count): :func:`field_name` names them.
    """

    counts: tuple[int, ...]
    kinds: tuple[str, ...] = OUTCOMES
    failures: tuple[str, ...] = FAILURES

    n_ok = _Count(OK)
    n_premature = _Count(PREMATURE)
    n_stalled = _Count(STALLED)
    n_outpaced = _Count(OUTPACED)
    n_missed_onset = _Count(MISSED_ONSET)
    n_silent = _Count(SILENT)
    n_unheard = _Count(UNHEARD)
    n_aborted = _Count(ABORTED)
    n_superseded = _Count(SUPERSEDED)
    n_recording_ended = _Count(RECORDING_ENDED)
    n_speech_unheard = _Count(UNHEARD_SPEECH)
    n_no_event = _Count(NO_EVENT)

    @classmethod
    def of_codes(cls, codes: ArrayLike, *, extra: Sequence[str] = (), failures: Sequence[str] = FAILURES) -> Tally:
        """The tally of outcome codes (indices into ``OUTCOMES`` followed by ``extra``)."""
        kinds = (*OUTCOMES, *extra)
        found = np.bincount(np.asarray(codes, np.int64).ravel(), minlength=len(kinds))
        return cls(tuple(int(x) for x in found), kinds, (*failures, *extra))

    @classmethod
    def of(cls, outcomes: Iterable[str], *, extra: Sequence[str] = (), failures: Sequence[str] = FAILURES) -> Tally:
        """The tally of outcomes by name (each of ``OUTCOMES`` or ``extra``; the kinds of ``extra`` are failures)."""
        index = {kind: i for i, kind in enumerate((*OUTCOMES, *extra))}
        return cls.of_codes(np.array([index[o] for o in outcomes], np.int64), extra=extra, failures=failures)

    def __getitem__(self, kind: str) -> int:
        """How many beats ended as ``kind`` (0 for a kind this tally does not count)."""
        return self.counts[self.kinds.index(kind)] if kind in self.kinds else 0

    def __add__(self, other: Tally) -> Tally:
        """Two tallies of the same kinds added up."""
        assert self.kinds == other.kinds and self.failures == other.failures
        return Tally(tuple(a + b for a, b in zip(self.counts, other.counts)), self.kinds, self.failures)

    @property
    def n_beats(self) -> int:
        """The beats the clock heard: every beat counted but the ``unheard`` ones (no tick of their life)."""
        return sum(n for kind, n in zip(self.kinds, self.counts) if kind != UNHEARD)

    @property
    def n_failed(self) -> int:
        """The failures: every beat whose kind is one of ``failures``."""
        return sum(self[kind] for kind in self.failures)


def record(value: Any) -> Any:
    """``value`` as plain data, as :func:`dataclasses.asdict` makes it, with every tally spelled out.

    A dataclass holding a ``tally`` becomes the dict of the keys its ``RECORD`` names, in that order: each one
    of its fields, or else the tally's count of that name (``n_ok``, ``n_beats``, ``n_failed``). Every view
    that writes a result (JSON, CSV, a DataFrame) writes this.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value)]
        if "tally" not in names:
            return {name: record(getattr(value, name)) for name in names}
        tally = value.tally  # type: ignore[attr-defined]
        return {
            key: record(getattr(value, key)) if key in names else getattr(tally, key)
            for key in value.RECORD  # type: ignore[attr-defined]
        }
    if isinstance(value, (list, tuple)):
        return type(value)(record(x) for x in value)
    if isinstance(value, dict):
        return type(value)((record(k), record(v)) for k, v in value.items())
    return value


def tally_by_setting(codes: NDArray[np.int8], setting: NDArray[np.int64], n: int) -> dict[str, NDArray[np.int64]]:
    """The tally of every setting at once: per outcome of ``OUTCOMES``, how many beats ended so at each of the
    ``n`` settings (``setting`` gives each code's setting, broadcast against ``codes``)."""
    found = np.bincount((codes.astype(np.int64) * n + setting).ravel(), minlength=len(OUTCOMES) * n)
    return dict(zip(OUTCOMES, found.reshape(len(OUTCOMES), n)))
