"""Value classes at a fraction of ``@dataclass``'s import cost (docs/bench.md, "Start-up").

On Python 3.11 ``@dataclass`` compiles every method it generates with its own ``exec`` (``__init__``,
``__repr__``, ``__eq__``; a frozen class also ``__setattr__``, ``__delattr__`` and ``__hash__``): about
0.3 ms a class, 0.6 ms a frozen one, ~25 ms over the model, plan, homes and diagnostics classes
that every command imports before it reads a byte. A class here writes its own ``__init__`` (compiled
with its module's bytecode) and is decorated with :func:`value`, which keeps it a dataclass
(``dataclasses.fields``, ``replace`` and ``asdict`` work as before) but generates nothing, and gives it
what the generated methods did, shared and not compiled: equality and (frozen) hash over the tuple of
its compared fields, the same ``repr``, and, frozen, the same refusal of any assignment."""
from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, fields
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, Callable


class _Factory:
    """The default of a field whose dataclass default was a ``default_factory``: passing nothing gets a
    fresh value, passing anything (``None`` too) gets that, as with the generated ``__init__``."""

    def __repr__(self) -> str:
        return "<factory>"


FACTORY: Any = _Factory()


def value(cls: type | None = None, *, frozen: bool = False, slots: bool = False) -> Any:
    """``@value`` / ``@value(frozen=True)`` in place of ``@dataclass`` / ``@dataclass(frozen=True)`` on a
    class that defines ``__init__`` (every field, in field order, with the same defaults).
    ``slots=True``: the fields live in slots, as ``@dataclass(slots=True)`` makes them (a class made by
    the thousand, such as a plan's operations: no dict per instance); its ``__init__`` sets them with
    :func:`set_fields`."""
    def wrap(c: type) -> type:
        c = dataclass(init=False, repr=False, eq=False, slots=slots)(c)
        compared = tuple(f.name for f in fields(c) if f.compare)
        c._shown = tuple(f.name for f in fields(c) if f.repr)
        c._key = staticmethod(_key(compared))
        c.__eq__ = _eq
        c.__repr__ = _repr
        if frozen:
            c.__hash__ = _hash
            c.__setattr__ = _frozen_set
            c.__delattr__ = _frozen_del
            if "__slots__" in c.__dict__:      # pickled by slot values, set past __setattr__ (as dataclasses does)
                c.__getstate__ = _getstate
                c.__setstate__ = _setstate
        else:
            c.__hash__ = None                   # mutable and compared by value: unhashable, as a dataclass
        return c
    return wrap if cls is None else wrap(cls)


def set_fields(obj: Any, **values: Any) -> None:
    """Set a (frozen or slotted) instance's fields in its ``__init__``."""
    for name, v in values.items():
        object.__setattr__(obj, name, v)


def _key(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """The tuple a generated ``__eq__`` compares and a frozen ``__hash__`` hashes (one field: still a tuple)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        return self._key(self) == self._key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self._key(self))


@recursive_repr()
def _repr(self: Any) -> str:
    return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._shown)})"


def _frozen_set(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_del(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> list:
    return [getattr(self, f.name) for f in fields(self)]


def _setstate(self: Any, state: list) -> None:
    for f, v in zip(fields(self), state):
        object.__setattr__(self, f.name, v)
