"""Avro schema compatibility as Avro's schema resolution defines it: can a reader schema read
what a writer schema wrote? The registry server of the tests checks registrations with it.

Works on fastavro's parsed form (named types given once, then referred to by full name),
with the named types of both schemas in ``names``. Each problem found is one message.
"""

from __future__ import annotations

from typing import Any

PROMOTIONS = {
    "int": {"int", "long", "float", "double"},
    "long": {"long", "float", "double"},
    "float": {"float", "double"},
    "string": {"string", "bytes"},
    "bytes": {"bytes", "string"},
}
NAMED = {"record", "enum", "fixed", "error"}


class _Checker:
    def __init__(self, reader_names: dict[str, Any], writer_names: dict[str, Any]) -> None:
        self.reader_names = reader_names
        self.writer_names = writer_names
        self.seen: set[tuple[str, str]] = set()
        self.problems: list[str] = []

    @staticmethod
    def _resolve(schema: Any, names: dict[str, Any]) -> Any:
        while isinstance(schema, str) and schema in names:
            schema = names[schema]
        return schema

    @staticmethod
    def _type(schema: Any) -> str:
        if isinstance(schema, list):
            return "union"
        if isinstance(schema, dict):
            return str(schema["type"])
        return str(schema)

    def check(self, reader: Any, writer: Any, path: str) -> bool:
        reader = self._resolve(reader, self.reader_names)
        writer = self._resolve(writer, self.writer_names)
        rtype, wtype = self._type(reader), self._type(writer)
        if wtype == "union":
            return all([self.check(reader, branch, f"{path}/{i}") for i, branch in enumerate(writer)])
        if rtype == "union":
            saved = self.problems
            for branch in reader:
                self.problems = []
                if self.check(branch, writer, path):
                    self.problems = saved
                    return True
            self.problems = saved
            return self._fail(f"{path}: the reader's union has no branch for the writer's {wtype}")
        if rtype in PROMOTIONS or wtype in PROMOTIONS:
            if rtype in PROMOTIONS.get(wtype, {wtype}):
                return True
            return self._fail(f"{path}: the writer's {wtype} cannot be read as {rtype}")
        if rtype != wtype:
            return self._fail(f"{path}: the writer's {wtype} cannot be read as {rtype}")
        if rtype in NAMED:
            rname, wname = reader["name"], writer["name"]
            if rname != wname and wname not in reader.get("aliases", ()):
                return self._fail(f"{path}: the writer's {wtype} {wname} is not the reader's {rname}")
            if (rname, wname) in self.seen:
                return True
            self.seen.add((rname, wname))
        if rtype in {"record", "error"}:
            return self._record(reader, writer, path)
        if rtype == "enum":
            missing = [s for s in writer["symbols"] if s not in reader["symbols"]]
            if missing and "default" not in reader:
                return self._fail(f"{path}: the reader's enum {reader['name']} lacks the symbols {missing}")
            return True
        if rtype == "fixed" and reader["size"] != writer["size"]:
            return self._fail(f"{path}: fixed size {writer['size']} cannot be read as size {reader['size']}")
        if rtype == "array":
            return self.check(reader["items"], writer["items"], f"{path}/items")
        if rtype == "map":
            return self.check(reader["values"], writer["values"], f"{path}/values")
        return True

    def _record(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> bool:
        written = {field["name"]: field for field in writer["fields"]}
        ok = True
        for index, field in enumerate(reader["fields"]):
            names = [field["name"], *field.get("aliases", ())]
            match = next((written[name] for name in names if name in written), None)
            where = f"{path}/fields/{index}"
            if match is None:
                if "default" not in field:
                    ok = self._fail(
                        f"{where}: the reader's field '{field['name']}' has no default value "
                        "and is missing from the writer's schema"
                    )
            elif not self.check(field["type"], match["type"], where):
                ok = False
        return ok

    def _fail(self, problem: str) -> bool:
        self.problems.append(problem)
        return False


def read_problems(
    reader: Any, writer: Any, reader_names: dict[str, Any], writer_names: dict[str, Any]
) -> list[str]:
    """Why ``reader`` cannot read data written with ``writer`` (empty: it can)."""
    checker = _Checker(reader_names, writer_names)
    checker.check(reader, writer, "")
    return checker.problems
