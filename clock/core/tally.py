"""One tally of outcomes: how many beats ended each way, counted once from outcome codes.

Pure numpy. Every view that counts a replay's outcomes counts them here:
derive's replay of a setting (:class:`clock.core.recommend.evidence.CorpusOutcome`),
a rule's (:class:`clock.core.recommend.rules.RuleResult`), a sweep's settings
(:class:`clock.core.sweep.SweepPoint`) and an endpointer's
(:class:`clock.core.compare.EndpointerResult`). A tally holds a count per
outcome of :data:`clock.core.outcome.OUTCOMES`, then per failure a view adds
(derive's ``unheard speech``: a beat the guide spoke in that the floor does
not hear; a rule's ``no-event``: a beat without the provider's event the rule
needs), and which of them are failures (:data:`clock.core.outcome.FAILURES`,
and the ones added). Each view's result keeps its own fields (its output's
schema, in its order), filled from the tally (:meth:`Tally.fields`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .outcome import FAILURES, OUTCOMES

__all__ = ["NO_EVENT", "UNHEARD_SPEECH", "Tally", "failed", "field_name", "tally_by_setting"]

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
    """

    counts: tuple[int, ...]
    kinds: tuple[str, ...] = OUTCOMES
    failures: tuple[str, ...] = FAILURES

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
    def n_failed(self) -> int:
        """The failures: every beat whose kind is one of ``failures``."""
        return sum(self[kind] for kind in self.failures)

    def fields(self, *kinds: str) -> dict[str, int]:
        """The counts of ``kinds`` as a result's fields (:func:`field_name`), to build it with."""
        return {field_name(kind): self[kind] for kind in kinds}


def failed(result: Any, failures: Sequence[str] = FAILURES) -> int:
    """A result's failures, read from its count fields (:func:`field_name`) of the kinds in ``failures``."""
    return sum(getattr(result, field_name(kind)) for kind in failures)


def tally_by_setting(codes: NDArray[np.int8], setting: NDArray[np.int64], n: int) -> dict[str, NDArray[np.int64]]:
    """The tally of every setting at once: per outcome of ``OUTCOMES``, how many beats ended so at each of the
    ``n`` settings (``setting`` gives each code's setting, broadcast against ``codes``)."""
    found = np.bincount((codes.astype(np.int64) * n + setting).ravel(), minlength=len(OUTCOMES) * n)
    return dict(zip(OUTCOMES, found.reshape(len(OUTCOMES), n)))
