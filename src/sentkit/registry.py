"""One named registry per folder (encoders, tasks, objectives): explicit, no import magic."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from sentkit.errors import UnknownName

T = TypeVar("T")


class Registry(Generic[T]):
    """A dict of name -> factory that refuses duplicates and suggests close names for typos."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"duplicate {self.kind} name {name!r}")
        self._items[name] = item
        return item

    def register(self, name: str) -> Callable[[T], T]:
        def wrap(item: T) -> T:
            return self.add(name, item)

        return wrap

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._items, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownName(
                f"unknown {self.kind} {name!r}{hint} (known: {', '.join(sorted(self._items))})"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def names(self) -> list[str]:
        return sorted(self._items)
