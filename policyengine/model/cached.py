"""``cached_property`` without a lock: a value computed on first read and kept on the instance;
``kept_on``, the same for a function of an immutable object defined outside its class.

Python 3.11's ``functools.cached_property`` takes one lock shared by every instance of the
class on each first read (Python 3.12 dropped it). The engine reads a few such properties of
each new object every cycle (the replaced node's ``NodeInfo``, the pod's view) and thousands
when a new template is first evaluated over every node's view; the lock cost twice the read.
The values are pure functions of immutable objects, so two threads computing one at once
both store an equal value: nothing needs the lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class cached_property(Generic[T]):
    """``functools.cached_property``'s behaviour, lock-free: the first read stores the value
    in the instance's ``__dict__``, which later reads find before this descriptor."""

    def __init__(self, func: Callable[[Any], T]):
        self.func = func
        self.attrname = func.__name__  # ``__set_name__`` gives the name it is bound to
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attrname = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> cached_property[T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = self.func(instance)
        instance.__dict__[self.attrname] = value
        return value


_MISSING = object()


def kept_on(instance: Any, name: str, make: Callable[[Any], T]) -> T:
    """``make(instance)``, computed on the first ask and kept in the instance's ``__dict__``
    under ``name`` as ``cached_property`` keeps a value: for what a layer above an immutable
    object derives from it (the value may be None). Two threads asking at once both compute
    it; the first stored is the one both keep, so its identity is stable."""
    known = instance.__dict__
    value = known.get(name, _MISSING)
    if value is _MISSING:
        value = known.setdefault(name, make(instance))
    return value  # type: ignore[no-any-return]
