"""Trace context in a record's headers: the carrier OpenTelemetry's propagators read and write.

Header values are bytes; the propagators speak text. A value that is not UTF-8 is read with
replacement characters, so the propagator finds no valid context in it (the record still
reaches the application, with a span of its own trace); writing a key replaces any header of
that key already there, so forwarding a consumed record's headers does not carry two contexts.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.propagators.textmap import Getter, Setter

Headers = Sequence[tuple[str, bytes | None]]
HeaderList = list[tuple[str, bytes | None]]


class HeaderGetter(Getter[Headers]):
    def get(self, carrier: Headers, key: str) -> list[str] | None:
        values = None
        for k, v in carrier:
            if k == key and v is not None:
                if values is None:
                    values = []
                values.append(v.decode(errors="replace"))
        return values

    def keys(self, carrier: Headers) -> list[str]:
        return [k for k, _ in carrier]


class HeaderSetter(Setter[HeaderList]):
    def set(self, carrier: HeaderList, key: str, value: str) -> None:
        for k, _ in carrier:
            if k == key:
                carrier[:] = [item for item in carrier if item[0] != key]
                break
        carrier.append((key, value.encode()))


GETTER = HeaderGetter()
SETTER = HeaderSetter()
