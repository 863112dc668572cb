"""Read-only arrays: what a :class:`Trace` or a :class:`ModelSpec` holds cannot change.

numpy's ``writeable`` flag alone does not promise that: a read-only array may be a view
of a buffer that something else still writes (``np.broadcast_to`` of a caller's row, a
view taken before the flag was cleared, a memory-mapped file). So the package remembers
the arrays it froze itself, at the moment it made them, when nothing else could hold
them. Those, and views of them, are kept as they are; any other array (a caller's) is
copied, and the copy frozen: the caller's own array stays as writeable as it was.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]

Registry = weakref.WeakValueDictionary[int, np.ndarray[Any, Any]]
# id -> array, for the arrays freeze() made read-only (an entry goes with its array),
# and those of them already checked to hold only finite numbers (a model file's).
_FROZEN: Registry = weakref.WeakValueDictionary()
_FINITE: Registry = weakref.WeakValueDictionary()


def freeze(array: Matrix, *, finite: bool = False) -> Matrix:
    """Make ``array`` read-only and the package's own. Nothing may write its numbers
    afterwards: it must be new, held by no one else (a result just computed), or a view
    of rows that are never written again (a KV cache's). ``finite``: every number was
    checked finite, so a :class:`ModelSpec` made of it need not check again. Returns it."""
    array.flags.writeable = False
    _FROZEN[id(array)] = array
    if finite:
        _FINITE[id(array)] = array
    return array


def _registered(array: np.ndarray[Any, Any], registry: Registry) -> bool:
    current: object = array
    while isinstance(current, np.ndarray):
        if current.flags.writeable:  # a frozen array made writeable again by hand
            return False
        if registry.get(id(current)) is current:
            return True
        current = current.base
    return False


def is_frozen(array: np.ndarray[Any, Any]) -> bool:
    """Whether ``array`` is one :func:`freeze` made, or a view of one: nothing writes it."""
    return _registered(array, _FROZEN)


def known_finite(array: np.ndarray[Any, Any]) -> bool:
    """Whether ``array`` is (a view of) a frozen array already checked to be finite."""
    return _registered(array, _FINITE)


def read_only(array: npt.ArrayLike, *, finite: bool = False) -> Matrix:
    """``array`` itself where it is already the package's frozen float64, else a frozen
    float64 copy (integers become floats; the caller's array is left untouched);
    ``finite`` as for :func:`freeze`, for the copy."""
    if isinstance(array, np.ndarray) and array.dtype == np.float64 and is_frozen(array):
        return array
    return freeze(np.array(array, dtype=np.float64), finite=finite)


def computed(array: Matrix) -> Matrix:
    """A stage's numbers, just computed: frozen in place where the array is new (it owns
    its memory), else (a view) kept if it is the package's frozen, or copied."""
    if array.base is None and array.flags.owndata and array.dtype == np.float64:
        return freeze(array)
    return read_only(array)
