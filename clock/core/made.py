"""A sequence whose items are made when read: how a log of a million beats costs arrays, not objects.

:class:`Made` holds the few items kept as objects (the beats the clock heard speech in) and makes every other
one from arrays when it is read. The replay (:mod:`clock.core.replay`), the analysis at one floor
(:mod:`clock.core.analysis`) and the beats listing (:mod:`clock.core.beats`) return their beats this way.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar, overload

__all__ = ["Made"]


T = TypeVar("T")


class Made(Sequence[T]):
    """A sequence whose items are made when read, except the few kept as objects.

    A log may hold a million terminal responses, nearly all superseded before any speech: their beats are
    alike but for a few numbers, kept in arrays, and each is made when read (and forgotten after), so a
    log's beats cost arrays, not objects. Reading is by index, slice (a list) or iteration.
    """

    __slots__ = ("_kept", "_make", "_n")

    def __init__(self, n: int, kept: dict[int, T], make: Callable[[int], T]) -> None:
        self._n, self._kept, self._make = n, kept, make

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        j = operator.index(i)
        if j < 0:
            j += self._n
        if not 0 <= j < self._n:
            raise IndexError("index out of range")
        found = self._kept.get(j)
        return self._make(j) if found is None else found

    def __iter__(self) -> Iterator[T]:
        kept, make = self._kept, self._make
        for j in range(self._n):
            found = kept.get(j)
            yield make(j) if found is None else found

    def __repr__(self) -> str:
        return f"Made({self._n} items, {len(self._kept)} kept)"
