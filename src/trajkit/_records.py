"""Record classes for the modules every ``trajkit steps`` process imports
(the registry, the reading helpers, the tool tables, the format layouts):
what ``@dataclass`` gives them, without its import-time cost.

``@dataclass`` writes each class's methods as source text and compiles it
when the class is defined: about 4M instructions per class, more than
reading a small run. A class deriving from :class:`Record` names its fields
once, in order, as ``__match_args__`` (and as ``__slots__`` when it has
slots), writes its ``__init__`` by hand, and gets the rest from here, with
a dataclass's behaviour:

- ``repr``: ``Name(field=value, ...)`` (the class's ``__qualname__``);
- ``==``: same class and equal fields, else ``NotImplemented``; a mutable
  record is unhashable;
- :class:`FrozenRecord`: assigning or deleting an attribute raises
  :class:`dataclasses.FrozenInstanceError`; hashed by its fields; pickled
  (and copied) through its constructor.

``tests/test_records.py`` compares each record class with the dataclass of
the same fields. (:mod:`dataclasses` itself is already imported by
:mod:`trajkit.model`, so the exception costs nothing here.)
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any

__all__ = ["FrozenRecord", "Record"]


class Record:
    """A mutable record: ``repr`` and ``==`` over the fields named by ``__match_args__``."""

    __slots__ = ()
    __match_args__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, f) for f in self.__match_args__])

    def __repr__(self) -> str:
        return f"{self.__class__.__qualname__}({', '.join([f'{f}={getattr(self, f)!r}' for f in self.__match_args__])})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class FrozenRecord(Record):
    """An immutable record: hashable, and set only by its ``__init__`` (through ``object.__setattr__``)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._values())

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, self._values())
