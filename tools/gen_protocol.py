#!/usr/bin/env python3
"""Generate ``aiokafka_lead/protocol/generated/`` from Apache Kafka's JSON message specs.

    python tools/gen_protocol.py           # (re)write the generated modules
    python tools/gen_protocol.py --check   # exit 1 with a diff if they drifted

The specs are read from ``common/message/*.json`` inside the kafka-clients jar of the Kafka
version the test harness pins (``aiokafka_lead.testing.cluster.jars``), which the harness
downloads into its per-user cache anyway; so a clone needs nothing beside it and no spec
file is copied into the project. ``--jar JAR`` names another kafka-clients jar and
``--spec-dir DIR`` a directory of spec files (``clients/src/main/resources/common/message/``
of a Kafka checkout).

Why generated code: the hot paths (Produce encode, Fetch decode) need straight-line code
with precompiled ``struct.Struct``s, not a field table interpreted per call. One
encode and one decode function is emitted per *distinct wire layout* of each struct,
so versions that share a layout share code.

Naming: one class per message (the spec's ``name``); every struct of the message,
including ``commonStructs``, becomes a nested class of the message class under its spec
name (``ProduceResponse.PartitionProduceResponse``). Clash rule: if two different
structs in one message share a name, the later one is renamed ``<ParentStruct><Name>``
(none do in Kafka 4.4.0's generated set). Fields are the snake_case of spec names.
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import re
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "aiokafka_lead" / "protocol" / "generated"
OPEN = 32767  # open-ended version range upper bound

_API_LIST = """
    ApiVersions Metadata Produce Fetch ListOffsets OffsetForLeaderEpoch FindCoordinator
    JoinGroup SyncGroup Heartbeat LeaveGroup OffsetCommit OffsetFetch InitProducerId
    AddPartitionsToTxn AddOffsetsToTxn EndTxn TxnOffsetCommit CreateTopics DeleteTopics
    CreatePartitions DescribeConfigs AlterConfigs IncrementalAlterConfigs DescribeCluster ElectLeaders
    AlterPartitionReassignments ListPartitionReassignments ListGroups DescribeGroups
    DeleteGroups DeleteRecords SaslHandshake SaslAuthenticate DescribeUserScramCredentials
    AlterUserScramCredentials ConsumerGroupHeartbeat ConsumerGroupDescribe
    ShareGroupHeartbeat ShareGroupDescribe ShareFetch ShareAcknowledge
    DescribeShareGroupOffsets AlterShareGroupOffsets DeleteShareGroupOffsets
    GetTelemetrySubscriptions PushTelemetry
"""
APIS = tuple(_API_LIST.split())
DATA_SCHEMAS = ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment")

# spec type -> (struct letter, size, python type)
FIXED = {
    "int8": ("b", 1, "int"),
    "int16": ("h", 2, "int"),
    "int32": ("i", 4, "int"),
    "int64": ("q", 8, "int"),
    "uint16": ("H", 2, "int"),
    "uint32": ("I", 4, "int"),
    "float64": ("d", 8, "float"),
    "bool": ("?", 1, "bool"),
}
VARIABLE = {"string", "bytes", "records", "uuid"}
RESERVED = {"encode", "decode", "decode_at", "encode_into", "unknown_tagged_fields"}


# ---------------------------------------------------------------- spec model


def parse_range(text: str | None) -> tuple[int, int] | None:
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), OPEN
    if "-" in text:
        lo, hi = text.split("-")
        return int(lo), int(hi)
    return int(text), int(text)


def in_range(rng: tuple[int, int] | None, v: int) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


def snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()
    return s + "_" if keyword.iskeyword(s) else s


@dataclass
class FieldSpec:
    name: str
    attr: str
    kind: str  # fixed type name, string, bytes, records, uuid, struct, array
    elem: str | None  # array element: fixed type name, string, bytes, uuid, struct
    struct: str | None
    versions: tuple[int, int]
    nullable: tuple[int, int] | None
    tagged: tuple[int, int] | None
    tag: int | None
    ignorable: bool
    default: object

    def ever_nullable(self) -> bool:
        if self.nullable is None:
            return False
        return max(self.versions[0], self.nullable[0]) <= min(self.versions[1], self.nullable[1])


@dataclass
class StructSpec:
    name: str
    fields: list[FieldSpec] = field(default_factory=list)


@dataclass
class MessageSpec:
    name: str
    kind: str  # request, response, data
    api_key: int | None
    versions: tuple[int, int]
    flexible: tuple[int, int] | None
    unstable: bool
    top: StructSpec
    structs: dict[str, StructSpec]  # nested, in definition order

    def all_versions(self) -> range:
        return range(self.versions[0], self.versions[1] + 1)

    def is_flex(self, v: int) -> bool:
        return in_range(self.flexible, v)


# A spec reader maps a spec file name ("ProduceRequest.json") to its text, or None.
SpecReader = Callable[[str], "str | None"]
JAR_SPEC_PREFIX = "common/message/"


def dir_reader(spec_dir: Path) -> SpecReader:
    def read(name: str) -> str | None:
        path = spec_dir / name
        return path.read_text() if path.is_file() else None

    return read


def jar_reader(jar: Path) -> SpecReader:
    """Read specs straight out of a kafka-clients jar (nothing is extracted to disk)."""
    with zipfile.ZipFile(jar) as archive:
        texts = {
            entry[len(JAR_SPEC_PREFIX) :]: archive.read(entry).decode()
            for entry in archive.namelist()
            if entry.startswith(JAR_SPEC_PREFIX) and entry.endswith(".json")
        }
    if not texts:
        raise SystemExit(f"no {JAR_SPEC_PREFIX}*.json in {jar}: not a kafka-clients jar")
    return texts.get


def pinned_jar_reader() -> SpecReader:
    """The kafka-clients jar of the harness's Kafka version, provisioned if needed."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from aiokafka_lead.testing.cluster.jars import clients_jar

    return jar_reader(clients_jar())


def load_json(text: str) -> dict[str, object]:
    text = re.sub(r"^\s*//.*$", "", text, flags=re.M)
    data: dict[str, object] = json.loads(text)
    return data


def parse_message(text: str) -> MessageSpec:
    raw = load_json(text)
    name = str(raw["name"])
    structs: dict[str, StructSpec] = {}
    raw_defs: dict[str, object] = {}
    common = {str(c["name"]): c for c in raw.get("commonStructs", [])}  # type: ignore[attr-defined]

    def parse_fields(fields: list[dict[str, object]], parent: str) -> list[FieldSpec]:
        out = []
        for f in fields:
            ftype = str(f["type"])
            is_array = ftype.startswith("[]")
            base = ftype[2:] if is_array else ftype
            struct_name = None
            if base not in FIXED and base not in VARIABLE:
                struct_name = register(base, f.get("fields"), parent)
            kind = "array" if is_array else ("struct" if struct_name else base)
            elem = ("struct" if struct_name else base) if is_array else None
            attr = snake(str(f["name"]))
            if attr in RESERVED:
                raise SystemExit(f"{name}: field {f['name']} clashes with a method name")
            out.append(
                FieldSpec(
                    name=str(f["name"]),
                    attr=attr,
                    kind=kind,
                    elem=elem,
                    struct=struct_name,
                    versions=parse_range(str(f["versions"])) or (1, 0),
                    nullable=parse_range(f.get("nullableVersions")),  # type: ignore[arg-type]
                    tagged=parse_range(f.get("taggedVersions")),  # type: ignore[arg-type]
                    tag=f.get("tag"),  # type: ignore[arg-type]
                    ignorable=bool(f.get("ignorable", False)),
                    default=f.get("default"),
                )
            )
        return out

    def register(sname: str, fields: object, parent: str) -> str:
        if fields is None:
            if sname in structs:
                return sname
            if sname not in common:
                raise SystemExit(f"{name}: unknown struct type {sname}")
            fields = common[sname]["fields"]
        key = sname
        if key in raw_defs and raw_defs[key] != fields:
            key = parent + sname  # documented clash rule
        if key == name:
            raise SystemExit(f"{name}: struct named like its message")
        if key not in raw_defs:
            raw_defs[key] = fields
            spec = StructSpec(key)
            structs[key] = spec
            spec.fields = parse_fields(fields, key)  # type: ignore[arg-type]
        return key

    top = StructSpec(name)
    top.fields = parse_fields(raw["fields"], name)  # type: ignore[arg-type]
    for cname in common:  # declared but unused common structs are still generated
        register(cname, None, name)
    return MessageSpec(
        name=name,
        kind=str(raw["type"]),
        api_key=raw.get("apiKey"),  # type: ignore[arg-type]
        versions=parse_range(str(raw["validVersions"])),  # type: ignore[arg-type]
        flexible=parse_range(str(raw.get("flexibleVersions", "none"))),
        unstable=bool(raw.get("latestVersionUnstable", False)),
        top=top,
        structs=structs,
    )


# ---------------------------------------------------------------- layouts


class Layouts:
    """Which versions of each struct share a wire layout (and so share code)."""

    def __init__(self, msg: MessageSpec) -> None:
        self.msg = msg
        self.by_name = {msg.name: msg.top, **msg.structs}
        self.reach: dict[str, set[int]] = {n: set() for n in self.by_name}
        self._sig: dict[tuple[str, int], object] = {}
        self._walk(msg.name, set(msg.all_versions()))
        self.groups: dict[str, dict[int, int]] = {}
        for sname, versions in self.reach.items():
            rep: dict[object, int] = {}
            mapping: dict[int, int] = {}
            for v in sorted(versions):
                mapping[v] = rep.setdefault(self.sig(sname, v), v)
            self.groups[sname] = mapping

    def _walk(self, sname: str, versions: set[int]) -> None:
        new = versions - self.reach[sname]
        if not new:
            return
        self.reach[sname] |= new
        for f in self.by_name[sname].fields:
            if f.struct:
                self._walk(f.struct, {v for v in new if in_range(f.versions, v)})

    def sig(self, sname: str, v: int) -> object:
        key = (sname, v)
        if key not in self._sig:
            parts: list[object] = [self.msg.is_flex(v)]
            for f in self.by_name[sname].fields:
                present = in_range(f.versions, v)
                tag = f.tag if present and in_range(f.tagged, v) else None
                child = self.sig(f.struct, v) if present and f.struct else None
                parts.append((f.attr, present, tag, in_range(f.nullable, v), child))
            self._sig[key] = tuple(parts)
        return self._sig[key]

    def fn(self, sname: str, v: int) -> str:
        return f"{sname}_{self.groups[sname][v]}"


# ---------------------------------------------------------------- code emission


class Emitter:
    def __init__(self, msg: MessageSpec) -> None:
        self.msg = msg
        self.lay = Layouts(msg)
        self.fixed_structs: dict[str, str] = {}  # format -> constant name

    # -- helpers
    def qual(self, sname: str) -> str:
        return self.msg.name if sname == self.msg.name else f"{self.msg.name}.{sname}"

    def fmt_const(self, fmt: str) -> str:
        name = "_F_" + fmt.replace("?", "o")
        self.fixed_structs[fmt] = name
        return name

    def py_type(self, f: FieldSpec) -> str:
        if f.kind in FIXED:
            return FIXED[f.kind][2]
        base = {
            "string": "str",
            "bytes": "bytes",
            "records": "bytes | memoryview",
            "uuid": "uuid.UUID",
        }.get(f.kind)
        if f.kind == "struct":
            base = self.qual(f.struct or "")
        elif f.kind == "array":
            base = f"list[{self.elem_type(f)}]"
        assert base is not None
        return f"{base} | None" if f.ever_nullable() or f.kind == "records" else base

    def elem_type(self, f: FieldSpec) -> str:
        if f.elem == "struct":
            return self.qual(f.struct or "")
        if f.elem in FIXED:
            return FIXED[f.elem][2]
        return {"string": "str", "bytes": "bytes", "uuid": "uuid.UUID"}[f.elem or ""]

    def default(self, f: FieldSpec) -> str:
        """Python expression of the spec default (a fresh object for mutable ones)."""
        d = f.default
        null = d == "null"
        if f.kind in FIXED:
            if f.kind == "bool":
                return "True" if str(d).lower() == "true" else "False"
            if f.kind == "float64":
                return repr(float(d)) if d is not None else "0.0"
            return str(int(str(d), 0)) if d is not None else "0"
        if null or f.kind == "records":
            return "None"
        if f.kind == "string":
            return repr(str(d)) if d is not None else "''"
        if f.kind == "bytes":
            return 'b""'
        if f.kind == "uuid":
            return "ZERO_UUID"
        if f.kind == "array":
            return "[]"
        return f"{self.qual(f.struct or '')}()"

    def mutable_default(self, f: FieldSpec) -> bool:
        return f.kind in ("array", "struct") and self.default(f) != "None"

    def nondefault(self, f: FieldSpec, expr: str) -> str:
        d = self.default(f)
        if d == "None":
            return f"{expr} is not None"
        if f.kind == "bool":
            return f"not {expr}" if d == "True" else expr
        if f.kind == "array":
            return f"({expr} is None or len({expr}) > 0)"
        return f"{expr} != {d}"

    # -- decode
    def read(self, f: FieldSpec, v: int, target: str, ind: str, out: list[str]) -> None:
        flex = self.msg.is_flex(v)
        nullable = in_range(f.nullable, v)
        c = "compact_" if flex else ""
        where = f"{self.msg.name}.{f.name}"
        if f.kind in FIXED:
            letter, size, _ = FIXED[f.kind]
            out.append(f"{ind}({target},) = {self.fmt_const(letter)}.unpack_from(buf, pos)")
            out.append(f"{ind}pos += {size}")
        elif f.kind in ("string", "bytes"):
            n = "nullable_" if nullable else ""
            out.append(f"{ind}{target}, pos = read_{c}{n}{f.kind}(buf, pos)")
        elif f.kind == "records":
            out.append(f"{ind}{target}, pos = read_{c}records(buf, pos)")
        elif f.kind == "uuid":
            out.append(f"{ind}{target}, pos = read_uuid(buf, pos)")
        elif f.kind == "struct":
            fn = "_d_" + self.lay.fn(f.struct or "", v)
            if nullable:
                out.append(f"{ind}if buf[pos] & 0x80:")
                out.append(f"{ind}    {target} = None")
                out.append(f"{ind}    pos += 1")
                out.append(f"{ind}else:")
                out.append(f"{ind}    {target}, pos = {fn}(buf, pos + 1)")
            else:
                out.append(f"{ind}{target}, pos = {fn}(buf, pos)")
        else:
            out.append(f"{ind}n, pos = read_{c}array_len(buf, pos)")
            out.append(f"{ind}if n < 0:")
            if nullable:
                out.append(f"{ind}    {target} = None")
            else:
                out.append(f'{ind}    raise DecodeError("null in non-nullable array {where}")')
            out.append(f"{ind}else:")
            ind2 = ind + "    "
            if f.elem in FIXED:
                letter, size, _ = FIXED[f.elem]
                call = f'read_fixed_array(buf, pos, n, "{letter}", {size})'
                out.append(f"{ind2}{target}, pos = {call}")
                return
            lst, el = f"l_{f.attr}", f"e_{f.attr}"
            out.append(f"{ind2}{lst}: list[{self.elem_type(f)}] = []")
            out.append(f"{ind2}for _ in range(n):")
            if f.elem == "struct":
                reader = "_d_" + self.lay.fn(f.struct or "", v)
            elif f.elem == "uuid":
                reader = "read_uuid"
            else:
                reader = f"read_{c}{f.elem}"
            out.append(f"{ind2}    {el}, pos = {reader}(buf, pos)")
            out.append(f"{ind2}    {lst}.append({el})")
            out.append(f"{ind2}{target} = {lst}")

    def decode_fn(self, sname: str, v: int) -> list[str]:
        spec = self.lay.by_name[sname]
        fid = self.lay.fn(sname, v)
        qual = self.qual(sname)
        alias = "_C_" + sname
        out = [f"def _d_{fid}(buf: memoryview, pos: int) -> tuple[{qual}, int]:"]
        out.append(f"    o = {alias}.__new__({alias})")
        pending: list[FieldSpec] = []

        def flush() -> None:
            if not pending:
                return
            fmt = "".join(FIXED[p.kind][0] for p in pending)
            size = sum(FIXED[p.kind][1] for p in pending)
            targets = ", ".join(f"o.{p.attr}" for p in pending)
            if len(pending) == 1:
                targets += ","
            out.append(f"    ({targets}) = {self.fmt_const(fmt)}.unpack_from(buf, pos)")
            out.append(f"    pos += {size}")
            pending.clear()

        tagged: list[FieldSpec] = []
        for f in spec.fields:
            present = in_range(f.versions, v)
            if present and in_range(f.tagged, v):
                tagged.append(f)
                flush()
                out.append(f"    o.{f.attr} = {self.default(f)}")
            elif not present:
                flush()
                out.append(f"    o.{f.attr} = {self.default(f)}")
            elif f.kind in FIXED:
                pending.append(f)
            else:
                flush()
                self.read(f, v, f"o.{f.attr}", "    ", out)
        flush()
        out.append("    o.unknown_tagged_fields = None")
        if self.msg.is_flex(v):
            out.append("    ntags = buf[pos]")
            out.append("    pos += 1")
            out.append("    if ntags:")
            out.append("        if ntags & 0x80:")
            out.append("            ntags, pos = read_uvarint(buf, pos - 1)")
            if tagged:
                out.append(f"        pos = _t_{fid}(o, buf, pos, ntags)")
            else:
                out.append("        pos = skip_tagged_fields(o, buf, pos, ntags)")
        out.append("    return o, pos")
        if self.msg.is_flex(v) and tagged:
            out.append("")
            out.append("")
            out.append(f"def _t_{fid}(o: {qual}, buf: memoryview, pos: int, ntags: int) -> int:")
            out.append("    for _ in range(ntags):")
            out.append("        tag, pos, end = read_tag_header(buf, pos)")
            kw = "if"
            for f in sorted(tagged, key=lambda t: t.tag or 0):
                out.append(f"        {kw} tag == {f.tag}:")
                self.read(f, v, f"o.{f.attr}", "            ", out)
                kw = "elif"
            out.append("        else:")
            out.append("            pos = store_unknown_tag(o, tag, buf, pos, end)")
            out.append("        check_tag_end(pos, end, tag)")
            out.append("    return pos")
        return out

    # -- encode
    def write(  # noqa: PLR0917
        self, f: FieldSpec, v: int, expr: str, ap: str, ind: str, out: list[str]
    ) -> None:
        flex = self.msg.is_flex(v)
        nullable = in_range(f.nullable, v)
        c = "compact_" if flex else ""
        if f.kind in FIXED:
            out.append(f"{ind}{ap}({self.fmt_const(FIXED[f.kind][0])}.pack({expr}))")
        elif f.kind in ("string", "bytes"):
            n = "nullable_" if nullable else ""
            out.append(f"{ind}write_{c}{n}{f.kind}({ap}, {expr})")
        elif f.kind == "records":
            n = "nullable_" if nullable else ""
            out.append(f"{ind}write_{c}{n}bytes({ap}, {expr})")
        elif f.kind == "uuid":
            out.append(f"{ind}{ap}({expr}.bytes)")
        elif f.kind == "struct":
            fn = "_e_" + self.lay.fn(f.struct or "", v)
            if nullable:
                out.append(f"{ind}if {expr} is None:")
                out.append(f'{ind}    {ap}(b"\\xff")')
                out.append(f"{ind}else:")
                out.append(f'{ind}    {ap}(b"\\x01")')
                out.append(f"{ind}    {fn}({expr}, {ap})")
            else:
                out.append(f"{ind}{fn}({expr}, {ap})")
        else:
            var = f"x_{f.attr}"
            out.append(f"{ind}{var} = {expr}")
            body = ind
            if f.ever_nullable():
                out.append(f"{ind}if {var} is None:")
                if nullable:
                    out.append(f"{ind}    {ap}({'ZERO' if flex else 'NULL32'})")
                else:
                    where = f"{self.msg.name}.{f.name}"
                    out.append(f'{ind}    raise ValueError("None in non-nullable array {where}")')
                out.append(f"{ind}else:")
                body = ind + "    "
            if flex:
                out.append(f"{body}{ap}(uvarint(len({var}) + 1))")
            else:
                out.append(f"{body}{ap}(I32.pack(len({var})))")
            if f.elem in FIXED:
                out.append(f'{body}write_fixed_array({ap}, {var}, "{FIXED[f.elem][0]}")')
                return
            out.append(f"{body}for e_{f.attr} in {var}:")
            el = f"e_{f.attr}"
            if f.elem == "struct":
                out.append(f"{body}    _e_{self.lay.fn(f.struct or '', v)}({el}, {ap})")
            elif f.elem == "uuid":
                out.append(f"{body}    {ap}({el}.bytes)")
            else:
                out.append(f"{body}    write_{c}{f.elem}({ap}, {el})")

    def encode_fn(self, sname: str, v: int) -> list[str]:
        spec = self.lay.by_name[sname]
        fid = self.lay.fn(sname, v)
        qual = self.qual(sname)
        out = [f"def _e_{fid}(o: {qual}, ap: Appender) -> None:"]
        pending: list[FieldSpec] = []

        def flush() -> None:
            if not pending:
                return
            fmt = "".join(FIXED[p.kind][0] for p in pending)
            args = ", ".join(f"o.{p.attr}" for p in pending)
            out.append(f"    ap({self.fmt_const(fmt)}.pack({args}))")
            pending.clear()

        tagged: list[FieldSpec] = []
        for f in spec.fields:
            present = in_range(f.versions, v)
            if not present or (in_range(f.tagged, v) and not self.msg.is_flex(v)):
                if not f.ignorable:
                    out.append(f"    if {self.nondefault(f, 'o.' + f.attr)}:")
                    out.append(f"        unsupported_field({self.qual(sname)}, {f.attr!r})")
            elif in_range(f.tagged, v):
                tagged.append(f)
            elif f.kind in FIXED:
                pending.append(f)
            else:
                flush()
                self.write(f, v, "o." + f.attr, "ap", "    ", out)
        flush()
        if self.msg.is_flex(v):
            if tagged:
                out.append("    tags: list[tuple[int, bytes]] = []")
                for f in sorted(tagged, key=lambda t: t.tag or 0):
                    out.append(f"    if {self.nondefault(f, 'o.' + f.attr)}:")
                    tp = f"tp{f.tag}"
                    out.append(f"        {tp}: list[Buf] = []")
                    self.write(f, v, "o." + f.attr, f"{tp}.append", "        ", out)
                    out.append(f'        tags.append(({f.tag}, b"".join({tp})))')
                out.append("    write_tagged_fields(ap, tags, o.unknown_tagged_fields)")
            else:
                out.append("    if o.unknown_tagged_fields:")
                out.append("        write_tagged_fields(ap, [], o.unknown_tagged_fields)")
                out.append("    else:")
                out.append("        ap(ZERO)")
        if len(out) == 1:
            out.append("    pass")
        return out

    # -- classes
    def class_body(self, sname: str, ind: str) -> list[str]:
        spec = self.lay.by_name[sname]
        out = []
        slots = ", ".join(repr(f.attr) for f in spec.fields)
        out.append(f"{ind}__slots__ = ({slots}{',' if len(spec.fields) == 1 else ''})")
        out.append("")
        for f in spec.fields:
            out.append(f"{ind}{f.attr}: {self.py_type(f)}")
        if spec.fields:
            out.append("")
            params = []
            for f in spec.fields:
                dflt = "MISSING" if self.mutable_default(f) else self.default(f)
                params.append(f"{f.attr}: {self.py_type(f)} = {dflt}")
            out.append(f"{ind}def __init__(self, *, {', '.join(params)}) -> None:")
            for f in spec.fields:
                if self.mutable_default(f):
                    out.append(
                        f"{ind}    self.{f.attr} = {self.default(f)} "
                        f"if {f.attr} is MISSING else {f.attr}"
                    )
                else:
                    out.append(f"{ind}    self.{f.attr} = {f.attr}")
        else:
            out.append(f"{ind}def __init__(self) -> None:")
        out.append(f"{ind}    self.unknown_tagged_fields = None")
        return out

    def field_table(self, sname: str) -> str:
        rows = []
        for f in self.lay.by_name[sname].fields:
            struct = self.qual(f.struct) if f.struct else "None"
            rows.append(
                f"    Field({f.attr!r}, {f.kind!r}, {f.elem!r}, {struct}, {f.versions!r}, "
                f"{f.nullable!r}, {f.tagged!r}, {f.tag!r}, {f.ignorable!r}),"
            )
        return f"{self.qual(sname)}._FIELDS = (\n" + "\n".join(rows) + "\n)" if rows else ""

    def module(self, source: str) -> str:
        msg = self.msg
        base = {"request": "Request", "response": "Response", "data": "DataSchema"}[msg.kind]
        vmin, vmax = msg.versions
        stable_max = vmax - 1 if msg.unstable else vmax
        flex = "None" if msg.flexible is None else str(msg.flexible[0])
        head = [f"class {msg.name}({base}):"]
        what = f"API key {msg.api_key}" if msg.api_key is not None else "data schema"
        head.append(f'    """Kafka {msg.name} ({what}), versions {vmin}-{vmax}."""')
        head.append("")
        body = self.class_body(msg.name, "    ")
        head.extend(body[:1])
        head.append("")
        if msg.api_key is not None:
            head.append(f"    API_KEY: ClassVar[int] = {msg.api_key}")
        head.append(f"    MIN_VERSION: ClassVar[int] = {vmin}")
        head.append(f"    MAX_VERSION: ClassVar[int] = {stable_max}")
        head.append(f"    LATEST_VERSION: ClassVar[int] = {vmax}")
        head.append(f"    FLEXIBLE_MIN_VERSION: ClassVar[int | None] = {flex}")
        for sname, _ in msg.structs.items():
            head.append("")
            head.append(f"    class {sname}(Struct):")
            head.extend(self.class_body(sname, "        "))
        head.extend(body[1:])
        if msg.name == "ApiVersionsResponse":
            head.append("")
            head.append("    @classmethod")
            head.append("    def header_version(cls, version: int) -> int:")
            head.append('        """Always v0: clients can read the error of a too-new request."""')
            head.append("        return 0")

        funcs: list[str] = []
        names = [msg.name, *msg.structs]
        for sname in reversed(names):  # children first, for readability
            seen: set[int] = set()
            for v in sorted(self.lay.groups[sname]):
                rep = self.lay.groups[sname][v]
                if rep in seen:
                    continue
                seen.add(rep)
                funcs.append("")
                funcs.append("")
                funcs.extend(self.encode_fn(sname, v))
                funcs.append("")
                funcs.append("")
                funcs.extend(self.decode_fn(sname, v))

        tail = [""]
        for sname in names:
            table = self.field_table(sname)
            if table:
                tail.append(table)
        enc = ", ".join(f"{v}: _e_{self.lay.fn(msg.name, v)}" for v in msg.all_versions())
        dec = ", ".join(f"{v}: _d_{self.lay.fn(msg.name, v)}" for v in msg.all_versions())
        tail.append(f"{msg.name}._ENCODERS = {{{enc}}}")
        tail.append(f"{msg.name}._DECODERS = {{{dec}}}")

        consts = [f"{name} = struct.Struct({'>' + fmt!r})" for fmt, name in sorted(
            self.fixed_structs.items(), key=lambda item: item[1])]
        aliases = [f"_C_{s} = {self.qual(s)}" for s in names]
        lines = [
            f'"""Generated by tools/gen_protocol.py from Kafka\'s {source}. Do not edit."""',
            "",
            "from __future__ import annotations",
            "",
            "import struct",
            "import uuid",
            "from typing import ClassVar",
            "",
            "from aiokafka_lead.errors import DecodeError",
            "from aiokafka_lead.protocol.primitives import (",
            *[f"    {n}," for n in PRIMITIVE_NAMES],
            ")",
            "from aiokafka_lead.protocol.schema import (",
            *[f"    {n}," for n in SCHEMA_NAMES],
            ")",
            "",
            *([*consts, ""] if consts else []),
            "",
            *head,
            "",
            "",
            *aliases,
            *funcs,
            "",
            *tail,
        ]
        return "\n".join(lines).rstrip() + "\n"


_PRIMITIVES = """I32 NULL32 ZERO ZERO_UUID Appender Buf read_array_len read_bytes
    read_compact_array_len read_compact_bytes read_compact_nullable_bytes
    read_compact_nullable_string read_compact_records read_compact_string read_fixed_array
    read_nullable_bytes
    read_nullable_string read_records read_string read_tag_header read_uuid read_uvarint
    check_tag_end uvarint write_bytes write_compact_bytes write_compact_nullable_bytes
    write_compact_nullable_string write_compact_string write_fixed_array write_nullable_bytes
    write_nullable_string write_string write_tagged_fields"""
_SCHEMA = """MISSING DataSchema Field Request Response Struct skip_tagged_fields store_unknown_tag
    unsupported_field"""


def _isort_order(name: str) -> tuple[bool, bool, str]:
    return (not name.isupper(), not name[0].isupper(), name)


PRIMITIVE_NAMES = sorted(_PRIMITIVES.split(), key=_isort_order)
SCHEMA_NAMES = sorted(_SCHEMA.split(), key=_isort_order)


def module_name(name: str) -> str:
    return snake(name)


def package_init(msgs: list[MessageSpec]) -> str:
    lines = [
        '"""Generated by tools/gen_protocol.py: every message class and the api-key registry."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    for m in sorted(msgs, key=lambda m: module_name(m.name)):
        mod = module_name(m.name)
        line = f"from aiokafka_lead.protocol.generated.{mod} import {m.name}"
        if len(line) > 100:
            line = f"from aiokafka_lead.protocol.generated.{mod} import (\n    {m.name},\n)"
        lines.append(line)
    lines += ["from aiokafka_lead.protocol.schema import Request, Response", "", "__all__ = ["]
    exported = sorted([m.name for m in msgs] + ["REQUEST_CLASSES", "RESPONSE_CLASSES"])
    lines += [f'    "{n}",' for n in exported]
    lines += ["]", ""]
    reqs = sorted((m for m in msgs if m.kind == "request"), key=lambda m: m.api_key or 0)
    lines.append("REQUEST_CLASSES: dict[int, type[Request]] = {")
    lines += [f"    {m.api_key}: {m.name}," for m in reqs]
    lines.append("}")
    lines.append("RESPONSE_CLASSES: dict[int, type[Response]] = {")
    lines += [f"    {m.api_key}: {m.name[:-7]}Response," for m in reqs]
    lines.append("}")
    for m in reqs:
        lines.append(f"{m.name}.RESPONSE_CLASS = {m.name[:-7]}Response")
    return "\n".join(lines) + "\n"


def generate(read: SpecReader) -> dict[Path, str]:
    files: dict[Path, str] = {}
    msgs = []
    sources = [f"{a}{k}" for a in APIS for k in ("Request", "Response")] + list(DATA_SCHEMAS)
    for src in sources:
        text = read(f"{src}.json")
        if text is None:
            if src in DATA_SCHEMAS:
                continue
            raise SystemExit(f"missing spec {src}.json")
        msgs.append(parse_message(text))
    unstable = {m.api_key for m in msgs if m.kind == "request" and m.unstable}
    for msg in msgs:
        if msg.kind == "response" and msg.api_key in unstable:
            msg.unstable = True  # the flag lives on the request; keep the pair aligned
        files[OUT_DIR / f"{module_name(msg.name)}.py"] = Emitter(msg).module(f"{msg.name}.json")
    files[OUT_DIR / "__init__.py"] = package_init(msgs)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--jar", type=Path, help="a kafka-clients jar (default: the pinned one)")
    source.add_argument("--spec-dir", type=Path, help="a directory of message spec files")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    if args.spec_dir is not None:
        read = dir_reader(args.spec_dir)
    elif args.jar is not None:
        read = jar_reader(args.jar)
    else:
        read = pinned_jar_reader()
    files = generate(read)
    if args.check:
        existing = {p for p in OUT_DIR.glob("*.py")}
        drift = []
        for path in sorted(set(files) | existing):
            want = files.get(path, "")
            have = path.read_text() if path.exists() else ""
            if want != have:
                diff = difflib.unified_diff(
                    have.splitlines(), want.splitlines(), str(path), "generated", lineterm=""
                )
                drift.append("\n".join(list(diff)[:20]))
        if drift:
            print(f"{len(drift)} generated file(s) differ from the specs:", file=sys.stderr)
            print("\n".join(drift[:5]), file=sys.stderr)
            print("run: python tools/gen_protocol.py", file=sys.stderr)
            return 1
        return 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for stale in set(OUT_DIR.glob("*.py")) - set(files):
        stale.unlink()
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
