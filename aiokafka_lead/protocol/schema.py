"""Runtime base classes of the generated messages.

The generator (``tools/gen_protocol.py``) emits straight-line encode/decode functions per
distinct wire layout; these bases only dispatch on the version and keep the error
contract: ``decode`` raises only ``DecodeError``; ``encode`` raises
``UnsupportedVersionError`` (like Java's generated ``write``) for a version the class does not
have or a non-ignorable field set to a non-default value in a version that lacks it,
and ``ValueError`` for values that cannot be represented (out of range, ``None`` in a
non-nullable field).

Trailing bytes after a complete message are a ``DecodeError`` unless the caller passes
``allow_trailing=True``: a well-formed peer never sends them (new data goes into tagged
fields), and strictness catches a wrong version early.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple, Self

from aiokafka_lead.errors import DecodeError, UnsupportedVersionError
from aiokafka_lead.protocol.primitives import (
    I16,
    Appender,
    Buf,
    as_view,
    check_tag_end,
    read_tag_header,
)

#: constructor default meaning "a fresh empty list / default struct" (never shared)
MISSING: Any = object()

Encoder = Callable[[Any, Appender], None]
Decoder = Callable[[memoryview, int], tuple[Any, int]]

#: exceptions the inner decode loop may raise on malformed input; converted at the boundary
DECODE_FAILURES: tuple[type[BaseException], ...] = (
    IndexError,
    struct.error,
    ValueError,  # includes UnicodeDecodeError
    OverflowError,
    MemoryError,
    RecursionError,
)


class Field(NamedTuple):
    """Schema of one field, kept at runtime for property tests and tooling."""

    attr: str
    kind: str  # int8..float64, bool, string, bytes, records, uuid, struct, array
    elem: str | None  # element kind for arrays
    struct: type[Struct] | None  # struct class for struct and struct arrays
    versions: tuple[int, int]  # inclusive; high 32767 means open-ended
    nullable: tuple[int, int] | None
    tagged: tuple[int, int] | None
    tag: int | None
    ignorable: bool


def _in(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


def _short(value: object) -> str:
    if isinstance(value, memoryview):
        return f"<memoryview of {value.nbytes} bytes>"
    if isinstance(value, bytes | bytearray) and len(value) > 64:
        return f"<{len(value)} bytes>"
    return repr(value)


class Struct:
    """A value object: keyword constructor, equality by fields, a readable repr."""

    __slots__ = ("unknown_tagged_fields",)

    _FIELDS: ClassVar[tuple[Field, ...]] = ()

    #: tagged fields this client does not know, kept as (tag, raw bytes) and re-sent
    unknown_tagged_fields: list[tuple[int, bytes]] | None

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f.attr) == getattr(other, f.attr) for f in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable value objects

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.attr}={_short(getattr(self, f.attr))}" for f in self._FIELDS)
        return f"{type(self).__qualname__}({inner})"

    @classmethod
    def field_in_version(cls, field: Field, version: int) -> bool:
        return _in(field.versions, version)

    @classmethod
    def field_nullable(cls, field: Field, version: int) -> bool:
        return _in(field.nullable, version)

    @classmethod
    def field_tagged(cls, field: Field, version: int) -> bool:
        return _in(field.tagged, version)


class Versioned(Struct):
    """A top-level schema (message or data schema) with versioned encode/decode."""

    __slots__ = ()

    MIN_VERSION: ClassVar[int]
    #: highest stable version; ``LATEST_VERSION`` may be higher (``latestVersionUnstable``)
    MAX_VERSION: ClassVar[int]
    LATEST_VERSION: ClassVar[int]
    #: first flexible version (compact strings/arrays, tagged fields), None if never
    FLEXIBLE_MIN_VERSION: ClassVar[int | None]
    _ENCODERS: ClassVar[dict[int, Encoder]] = {}
    _DECODERS: ClassVar[dict[int, Decoder]] = {}

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        flex = cls.FLEXIBLE_MIN_VERSION
        return flex is not None and version >= flex

    @classmethod
    def _not_supported(cls, version: int) -> str:
        return (
            f"{cls.__name__} v{version} is not supported "
            f"(this codec has v{cls.MIN_VERSION}-v{cls.LATEST_VERSION})"
        )

    def encode(self, version: int) -> bytes:
        """The body at ``version`` (no header, no size prefix)."""
        parts: list[Buf] = []
        self.encode_into(parts.append, version)
        return b"".join(parts)

    def encode_into(self, ap: Appender, version: int) -> None:
        """Append the body's parts (lets framing join header and body in one copy)."""
        enc = self._ENCODERS.get(version)
        if enc is None:
            raise UnsupportedVersionError(self._not_supported(version))
        try:
            enc(self, ap)
        except struct.error as exc:
            raise ValueError(f"{type(self).__name__} v{version}: {exc}") from exc
        except _UnsupportedFieldError as exc:
            # One encoder serves a range of versions: name the version asked for.
            raise UnsupportedVersionError(
                f"{exc.owner.__qualname__}.{exc.attr} is set to a non-default value, "
                f"which version {version} cannot carry"
            ) from None

    @classmethod
    def decode(cls, data: Buf, version: int, *, allow_trailing: bool = False) -> Self:
        """Decode a body; ``records`` fields are views into ``data``, not copies."""
        buf = as_view(data)
        obj, pos = cls.decode_at(buf, 0, version)
        if pos != len(buf) and not allow_trailing:
            raise DecodeError(
                f"{cls.__name__} v{version}: {len(buf) - pos} trailing bytes after the message"
            )
        return obj

    @classmethod
    def decode_at(cls, buf: memoryview, pos: int, version: int) -> tuple[Self, int]:
        """Decode starting at ``pos`` of a byte view; returns the object and the end."""
        dec = cls._DECODERS.get(version)
        if dec is None:
            raise DecodeError(cls._not_supported(version))
        try:
            obj, end = dec(buf, pos)
        except DecodeError:
            raise
        except DECODE_FAILURES as exc:
            raise DecodeError(f"{cls.__name__} v{version}: malformed ({exc!r})") from exc
        return obj, end


class DataSchema(Versioned):
    """A versioned struct that is not a request or response (e.g. consumer protocol)."""

    __slots__ = ()

    def encode_with_version(self, version: int) -> bytes:
        """int16 version + body: how JoinGroup/SyncGroup metadata carries these schemas."""
        return I16.pack(version) + self.encode(version)

    @classmethod
    def decode_with_version(cls, data: Buf) -> tuple[int, Self]:
        """Read the int16 version prefix, then the body.

        Like Java's ConsumerProtocol, a version newer than ours is read with our latest
        version and the bytes we do not understand are ignored (forward compatibility).
        """
        buf = as_view(data)
        if len(buf) < 2:
            raise DecodeError(f"{cls.__name__}: no version prefix")
        (version,) = I16.unpack_from(buf, 0)
        if version < cls.MIN_VERSION:
            raise DecodeError(f"{cls.__name__}: version {version} is below v{cls.MIN_VERSION}")
        newer = version > cls.LATEST_VERSION
        obj, pos = cls.decode_at(buf, 2, cls.LATEST_VERSION if newer else version)
        if pos != len(buf) and not newer:
            raise DecodeError(f"{cls.__name__} v{version}: trailing bytes after the body")
        return version, obj


class Message(Versioned):
    """A request or response body."""

    __slots__ = ()

    API_KEY: ClassVar[int]


class Request(Message):
    __slots__ = ()

    RESPONSE_CLASS: ClassVar[type[Response]]

    @classmethod
    def header_version(cls, version: int) -> int:
        """Request header v2 (tagged fields) for flexible versions, else v1."""
        return 2 if cls.is_flexible(version) else 1


class Response(Message):
    __slots__ = ()

    @classmethod
    def header_version(cls, version: int) -> int:
        """Response header v1 for flexible versions, else v0 (ApiVersions overrides)."""
        return 1 if cls.is_flexible(version) else 0


class _UnsupportedFieldError(UnsupportedVersionError):
    """Raised inside an encoder; ``encode_into`` re-raises it naming the requested version.

    A generated encoder is shared by every version with the same wire layout, so it does
    not know which of them was asked for.
    """

    def __init__(self, owner: type[Struct], attr: str) -> None:
        super().__init__(f"{owner.__qualname__}.{attr} is set to a non-default value")
        self.owner = owner
        self.attr = attr


def unsupported_field(cls: type[Struct], attr: str) -> None:
    """Java's behaviour for a non-ignorable field that the version cannot carry."""
    raise _UnsupportedFieldError(cls, attr)


def store_unknown_tag(o: Struct, tag: int, buf: memoryview, pos: int, end: int) -> int:
    """Keep a tagged field this schema does not know, so it survives a re-encode."""
    if o.unknown_tagged_fields is None:
        o.unknown_tagged_fields = []
    o.unknown_tagged_fields.append((tag, bytes(buf[pos:end])))
    return end


def skip_tagged_fields(o: Struct, buf: memoryview, pos: int, ntags: int) -> int:
    """Tagged-field section of a struct that has no known tags at this version."""
    for _ in range(ntags):
        tag, pos, end = read_tag_header(buf, pos)
        pos = store_unknown_tag(o, tag, buf, pos, end)
        check_tag_end(pos, end, tag)
    return pos
