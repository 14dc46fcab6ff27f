# cython: language_level=3, boundscheck=False, wraparound=False
"""A deep copy of JSON data in C: new dicts and lists, the same (immutable) leaves.

simweb copies states on every fork and reset, and its reference copy is an orjson round
trip (``orjson.loads(orjson.dumps(x))``): it serialises every leaf to text and parses it
back into new objects. For data that the round trip returns unchanged, copying the
containers and sharing the leaves gives the same value at about half the cost.

:func:`copy` does that for exactly the values the round trip preserves: dicts with str
keys, lists, str, int within 64 bits, finite floats, bool and None, nested at most
``MAX_DEPTH`` deep. On anything else (a tuple, a str subclass, a NaN, a lone surrogate,
a huge int, deeper nesting) it returns ``NotImplemented`` and the caller takes the round
trip, which converts or raises exactly as it always did (see simweb.state.deep_copy).
"""
from cpython.dict cimport PyDict_New, PyDict_Next, PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF, PyObject
from libc.math cimport isfinite


cdef extern from "Python.h":
    int PyUnicode_KIND(object)
    void *PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    Py_UCS4 PyUnicode_READ(int kind, void *data, Py_ssize_t index)
    int PyUnicode_1BYTE_KIND
    long long PyLong_AsLongLongAndOverflow(object, int *) except? -1
    double PyFloat_AS_DOUBLE(object)


#: Nesting deeper than this is left to the round trip (orjson refuses past its own limit,
#: which is higher, so whatever passes here is copied the way the round trip would).
cdef int MAX_DEPTH = 200   # a C global: _copy checks it for every container

cdef class _Refused(Exception):
    pass


cdef bint _plain_str(object s):
    """A str orjson can encode: any 1-byte str, a wider one without lone surrogates."""
    cdef int kind = PyUnicode_KIND(s)
    cdef void *data
    cdef Py_ssize_t i, n
    cdef Py_UCS4 c
    if kind == PyUnicode_1BYTE_KIND:
        return True
    data = PyUnicode_DATA(s)
    n = PyUnicode_GET_LENGTH(s)
    for i in range(n):
        c = PyUnicode_READ(kind, data, i)
        if 0xD800 <= c <= 0xDFFF:
            return False
    return True


cdef bint _plain_int(object o):
    """An int orjson encodes: -2**63 .. 2**64 - 1."""
    cdef int overflow = 0
    PyLong_AsLongLongAndOverflow(o, &overflow)
    if overflow == 0:
        return True
    if overflow < 0:
        return False
    return o <= 18446744073709551615


cdef object _leaf(object o, type t):
    """``o`` itself when the round trip would give an equal value of the same type."""
    if t is str:
        if _plain_str(o):
            return o
    elif t is int:
        if _plain_int(o):
            return o
    elif t is float:
        if isfinite(PyFloat_AS_DOUBLE(o)):
            return o
    elif t is bool or o is None:
        return o
    raise _Refused()


cdef object _copy(object o, int depth):
    cdef type t = type(o)
    cdef Py_ssize_t pos = 0, i, n
    cdef PyObject *k
    cdef PyObject *v
    cdef dict d
    cdef list out, src
    cdef object x
    cdef type xt
    if depth > MAX_DEPTH:
        raise _Refused()
    if t is dict:
        d = PyDict_New()
        while PyDict_Next(o, &pos, &k, &v):
            if type(<object>k) is not str or not _plain_str(<object>k):
                raise _Refused()
            x = <object>v
            xt = type(x)
            PyDict_SetItem(d, <object>k, _copy(x, depth + 1) if xt is dict or xt is list else _leaf(x, xt))
        return d
    if t is list:
        src = o
        n = len(src)
        out = PyList_New(n)
        for i in range(n):
            x = src[i]
            xt = type(x)
            x = _copy(x, depth + 1) if xt is dict or xt is list else _leaf(x, xt)
            Py_INCREF(x)
            PyList_SET_ITEM(out, i, x)
        return out
    return _leaf(o, t)


def copy(o):
    """A deep copy of JSON data ``o`` (new containers, shared leaves), or NotImplemented
    when ``o`` holds anything an orjson round trip would not return unchanged."""
    try:
        return _copy(o, 0)
    except _Refused:
        return NotImplemented
