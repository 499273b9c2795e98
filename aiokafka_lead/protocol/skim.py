"""Walk a message's bytes by its schema without building objects.

A Metadata answer for a cluster of a million partitions is tens of megabytes; decoding
all of it builds millions of objects the client may never use. :func:`struct_end` finds
where an encoded struct ends from the schema alone (``_FIELDS``), and
:func:`keep_array_items` rewrites a message body so one top-level struct array holds only
the items a predicate keeps; the generated decoder then decodes the much smaller body.
Bad bytes raise :class:`DecodeError` as the decoders do.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.protocol.primitives import Buf, read_uvarint, uvarint
from aiokafka_lead.protocol.schema import Field, Struct, Versioned
from aiokafka_lead.slices import run_to_end

_FIXED = {"int8": 1, "bool": 1, "int16": 2, "int32": 4, "int64": 8, "float64": 8, "uuid": 16}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
T = TypeVar("T")


def _take(buf: memoryview, pos: int, n: int) -> int:
    end = pos + n
    if n < 0 or end > len(buf):
        raise DecodeError(f"length {n} at offset {pos} runs past the end")
    return end


def _length(buf: memoryview, pos: int, kind: str, flexible: bool) -> tuple[int, int]:
    """A string's, byte string's or array's length (-1: null) and where its data starts."""
    if flexible:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    fmt = _I16 if kind == "string" else _I32
    _take(buf, pos, fmt.size)
    (n,) = fmt.unpack_from(buf, pos)
    return n, pos + fmt.size


def _skip_value(  # noqa: PLR0917 - a private helper of the walk
    kind: str, sub: type[Struct] | None, buf: memoryview, pos: int, version: int, flex: bool
) -> int:
    size = _FIXED.get(kind)
    if size is not None:
        return _take(buf, pos, size)
    if kind in ("string", "bytes", "records"):
        n, pos = _length(buf, pos, kind, flex)
        return pos if n < 0 else _take(buf, pos, n)
    if kind == "struct" and sub is not None:
        return struct_end(sub, buf, pos, version, flex)
    raise DecodeError(f"cannot skim a field of kind {kind}")


def skip_field(f: Field, buf: memoryview, pos: int, version: int, flex: bool) -> int:
    nullable = f.nullable is not None and f.nullable[0] <= version <= f.nullable[1]
    if f.kind == "struct" and f.struct is not None and nullable:
        _take(buf, pos, 1)  # a nullable struct: a marker byte (0xff for null) before it
        return pos + 1 if buf[pos] & 0x80 else struct_end(f.struct, buf, pos + 1, version, flex)
    if f.kind != "array":
        return _skip_value(f.kind, f.struct, buf, pos, version, flex)
    n, pos = _length(buf, pos, "array", flex)
    if n > len(buf) - pos:
        raise DecodeError(f"array length {n} at offset {pos} is impossible")
    elem = f.elem or "struct"
    size = _FIXED.get(elem)
    if size is not None:
        return pos if n < 0 else _take(buf, pos, n * size)
    for _ in range(n):
        pos = _skip_value(elem if f.struct is None else "struct", f.struct, buf, pos, version, flex)
    return pos


def skip_tags(buf: memoryview, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos = _take(buf, pos, size)
    return pos


_INLINE: dict[tuple[type[Struct], int], tuple[Field, ...]] = {}


def _inline(cls: type[Struct], version: int) -> tuple[Field, ...]:
    """The fields written in place at ``version`` (tagged ones live in the tag section)."""
    fields = _INLINE.get((cls, version))
    if fields is None:
        fields = _INLINE[(cls, version)] = tuple(
            f
            for f in cls._FIELDS
            if cls.field_in_version(f, version) and not (f.tagged and f.tagged[0] <= version <= f.tagged[1])
        )
    return fields


def struct_end(cls: type[Struct], buf: memoryview, pos: int, version: int, flexible: bool) -> int:
    """Where the struct of ``cls`` encoded at ``buf[pos:]`` ends."""
    try:
        for f in _inline(cls, version):
            pos = skip_field(f, buf, pos, version, flexible)
        return skip_tags(buf, pos) if flexible else pos
    except (IndexError, struct.error) as exc:
        raise DecodeError(f"{cls.__name__} v{version}: truncated ({exc})") from None


#: elements of a big array walked between two yields of the walks below
YIELD_EVERY = 256


def iter_struct_end(
    cls: type[Struct], buf: memoryview, pos: int, version: int, flexible: bool
) -> Generator[None, None, int]:
    """:func:`struct_end`, yielding every ``YIELD_EVERY`` elements of the struct's arrays of
    structs: one item may hold a million partitions."""
    for f in _inline(cls, version):
        if f.kind != "array" or f.struct is None:
            pos = skip_field(f, buf, pos, version, flexible)
            continue
        n, pos = array_length(buf, pos, flexible)
        for i in range(n):
            pos = struct_end(f.struct, buf, pos, version, flexible)
            if i % YIELD_EVERY == YIELD_EVERY - 1:
                yield
    return skip_tags(buf, pos) if flexible else pos


#: reads one item of an array from its start: a generator (it may yield) returning the value
#: and where the item ends
ItemReader = Callable[[memoryview, int], Generator[None, None, tuple[T, int]]]


@dataclass(frozen=True, slots=True)
class Split(Generic[T]):
    """A message body cut around one of its top-level arrays: what :func:`iter_take_items`
    returns."""

    before: memoryview  # the body up to the array (its length not included)
    after: memoryview  # the body after the array
    items: list[T]  # the values read from the items taken
    flexible: bool

    def joined(self, parts: Sequence[Buf]) -> bytes:
        """The body with the array holding ``parts``, encoded items."""
        count = uvarint(len(parts) + 1) if self.flexible else _I32.pack(len(parts))
        return b"".join((self.before, count, *parts, self.after))


def iter_take_items(
    cls: type[Versioned],
    body: memoryview,
    version: int,
    array: str,
    take: Callable[[memoryview, int], ItemReader[T] | None],
) -> Generator[None, None, Split[T]]:
    """Walk ``body`` (a ``cls`` message at ``version``) by schema: of the top-level struct
    array ``array``, read the items for which ``take(body, item_start)`` gives a reader, skip
    the others. Yields after each item and within items' big arrays, so a caller on an event
    loop can give it a turn now and then. A null array counts as empty."""
    flexible = cls.is_flexible(version)
    pos = 0
    try:
        for f in _inline(cls, version):
            if f.attr != array:
                pos = skip_field(f, body, pos, version, flexible)
                continue
            assert f.struct is not None
            start = pos
            n, pos = array_length(body, pos, flexible)
            items: list[T] = []
            for _ in range(n):
                reader = take(body, pos)
                if reader is None:
                    pos = yield from iter_struct_end(f.struct, body, pos, version, flexible)
                else:
                    value, pos = yield from reader(body, pos)
                    items.append(value)
                yield
            return Split(body[:start], body[pos:], items, flexible)
    except (IndexError, struct.error) as exc:
        raise DecodeError(f"{cls.__name__} v{version}: truncated ({exc})") from None
    raise ValueError(f"{cls.__name__} v{version} has no field {array!r}")


def keep_array_items(
    cls: type[Versioned],
    body: memoryview,
    version: int,
    array: str,
    keep: Callable[[memoryview, int], bool],
) -> bytes:
    """``body`` (a ``cls`` message at ``version``) with the top-level struct array ``array``
    holding only the items for which ``keep(body, item_start)`` is true."""
    item_cls = next(f.struct for f in cls._FIELDS if f.attr == array)
    assert item_cls is not None
    flexible = cls.is_flexible(version)

    def encoded(buf: memoryview, start: int) -> Generator[None, None, tuple[memoryview, int]]:
        end = yield from iter_struct_end(item_cls, buf, start, version, flexible)
        return buf[start:end], end

    walk = iter_take_items(cls, body, version, array, lambda b, i: encoded if keep(b, i) else None)
    split = run_to_end(walk)
    return split.joined(split.items)


def read_string(body: memoryview, pos: int, flexible: bool) -> tuple[str | None, int]:
    """A (nullable) string at ``pos``, and where it ends."""
    n, pos = _length(body, pos, "string", flexible)
    if n < 0:
        return None, pos
    end = _take(body, pos, n)
    try:
        return str(body[pos:end], "utf-8"), end
    except UnicodeDecodeError as exc:
        raise DecodeError(f"string at offset {pos} is not UTF-8") from exc


def read_name(body: memoryview, pos: int, flexible: bool) -> str | None:
    """A (nullable) string at ``pos``: how an item names itself."""
    return read_string(body, pos, flexible)[0]


def array_length(buf: memoryview, pos: int, flexible: bool) -> tuple[int, int]:
    """An array's length (-1: null) and where its items start; a length the rest of the
    buffer cannot hold is a :class:`DecodeError`."""
    n, pos = _length(buf, pos, "array", flexible)
    if n > len(buf) - pos:
        raise DecodeError(f"array length {n} at offset {pos} is impossible")
    return n, pos


def inline_fields(cls: type[Struct], version: int) -> tuple[Field, ...]:
    """The fields of ``cls`` written in place at ``version``, in order."""
    return _inline(cls, version)


__all__ = [
    "YIELD_EVERY",
    "ItemReader",
    "Split",
    "array_length",
    "inline_fields",
    "iter_struct_end",
    "iter_take_items",
    "keep_array_items",
    "read_name",
    "read_string",
    "skip_field",
    "skip_tags",
    "struct_end",
]
