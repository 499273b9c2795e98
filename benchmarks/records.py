"""Record batch encode/decode throughput: aiokafka_lead vs aiokafka (C extension and pure Python).

Run: ``.venv/bin/python -m benchmarks.records [--records N] [--repeat R]``.
Writes ``benchmarks/results/records.json``. Each figure is the best of ``--repeat`` runs,
measured in process CPU time (robust on a busy machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from aiokafka_lead.records import CompressionType, MemoryRecords, RecordBatchBuilder, native
from aiokafka_lead.records.builder import PyRecordBatchBuilder

VALUE_SIZE = 100
BATCH_SIZE = 16384
# name -> (codec, our compression level). aiokafka always compresses lz4 at level 9 (HC);
# "lz4" is our default fast mode, "lz4-l9" the like-for-like comparison.
CODECS: dict[str, tuple[int, int | None]] = {
    "none": (CompressionType.NONE, None),
    "lz4": (CompressionType.LZ4, None),
    "lz4-l9": (CompressionType.LZ4, 9),
}


def make_payloads(n: int) -> list[tuple[int, bytes, bytes]]:
    rnd = random.Random(42)
    words = [bytes(rnd.choice(b"abcdefghij") for _ in range(10)) for _ in range(64)]
    out = []
    for i in range(n):
        value = b"".join(rnd.choice(words) for _ in range(VALUE_SIZE // 10))
        out.append((1_700_000_000_000 + i // 50, b"key-%d" % (i % 1000), value))
    return out


# ------------------------------------------------------------------ ours


def encode_ours(
    payloads: list[tuple[int, bytes, bytes]],
    codec: int,
    level: int | None = None,
    builder_cls: type[RecordBatchBuilder] = RecordBatchBuilder,
) -> list[bytes]:
    """Encode with our builder (``builder_cls=PyRecordBatchBuilder``: without the C extension)."""
    batches: list[bytes] = []
    builder = builder_cls(codec, BATCH_SIZE, compression_level=level)
    append = builder.append
    for ts, key, value in payloads:
        if append(ts, key, value) is None:
            batches.append(builder.build(1000, 0, len(batches)))
            builder = builder_cls(codec, BATCH_SIZE, compression_level=level)
            append = builder.append
            append(ts, key, value)
    batches.append(builder.build(1000, 0, len(batches)))
    return batches


def decode_ours(buffer: bytes) -> int:
    n = 0
    for batch in MemoryRecords(buffer, topic="t", partition=0):
        batch.validate_crc()
        for record in batch.records():
            record.value  # noqa: B018 - touch the field a consumer reads
            n += 1
    return n


def decode_ours_without_c(buffer: bytes) -> int:
    """The same, with the C extension switched off (the pure-Python decoder)."""
    saved, native.decode_records = native.decode_records, None
    try:
        return decode_ours(buffer)
    finally:
        native.decode_records = saved


# ------------------------------------------------------------------ aiokafka


def aiokafka_impl(kind: str) -> tuple[Any, Any] | None:
    try:
        from aiokafka.record import default_records as dr
    except ImportError:
        return None
    if kind == "c":
        builder = getattr(dr, "_DefaultRecordBatchBuilderCython", None)
        batch = getattr(dr, "_DefaultRecordBatchCython", None)
        if builder is None or dr.DefaultRecordBatchBuilder is not builder:
            return None
        return builder, batch
    return dr._DefaultRecordBatchBuilderPy, dr._DefaultRecordBatchPy


def encode_aiokafka(
    impl: tuple[Any, Any], payloads: list[tuple[int, bytes, bytes]], codec: int
) -> list[bytes]:
    builder_cls = impl[0]
    batches: list[bytes] = []

    def new() -> Any:
        return builder_cls(2, codec, False, 1000, 0, len(batches), BATCH_SIZE)

    builder = new()
    offset = 0
    for ts, key, value in payloads:
        if builder.append(offset, ts, key, value, []) is None:
            batches.append(bytes(builder.build()))
            builder = new()
            offset = 0
            builder.append(offset, ts, key, value, [])
        offset += 1
    batches.append(bytes(builder.build()))
    return batches


def decode_aiokafka(impl: tuple[Any, Any], batches: list[bytes]) -> int:
    batch_cls = impl[1]
    n = 0
    for raw in batches:
        batch = batch_cls(raw)
        if not batch.validate_crc():
            raise RuntimeError("crc")
        for record in batch:
            record.value  # noqa: B018
            n += 1
    return n


# ------------------------------------------------------------------ harness


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best = float("inf")
    result = None
    for _ in range(repeat):
        t0 = time.process_time()
        result = fn()
        best = min(best, time.process_time() - t0)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--output", default=str(Path(__file__).parent / "results" / "records.json"))
    args = parser.parse_args(argv)
    n = args.records
    print(f"preparing {n} records of {VALUE_SIZE}-byte values ...", flush=True)
    payloads = make_payloads(n)
    impls = {"aiokafka_c": aiokafka_impl("c"), "aiokafka_py": aiokafka_impl("py")}
    results: dict[str, Any] = {
        "records": n,
        "value_size": VALUE_SIZE,
        "batch_size": BATCH_SIZE,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "aiokafka_c_extension": impls["aiokafka_c"] is not None,
        "rows": [],
    }
    rows = results["rows"]
    for codec_name, (codec, level) in CODECS.items():
        print(f"[{codec_name}] encode ours ...", flush=True)
        t_enc, batches = best_of(args.repeat, partial(encode_ours, payloads, codec, level))
        buffer = b"".join(batches)
        print(f"[{codec_name}] encode ours without the C extension ...", flush=True)
        t_enc_py, batches_py = best_of(
            args.repeat, partial(encode_ours, payloads, codec, level, PyRecordBatchBuilder)
        )
        assert b"".join(batches_py) == buffer  # the same bytes either way
        print(f"[{codec_name}] decode ours ...", flush=True)
        t_dec, count = best_of(args.repeat, partial(decode_ours, buffer))
        assert count == n, count
        print(f"[{codec_name}] decode ours without the C extension ...", flush=True)
        t_dec_py, count = best_of(args.repeat, partial(decode_ours_without_c, buffer))
        assert count == n, count
        row: dict[str, Any] = {
            "codec": codec_name,
            "batches": len(batches),
            "bytes": len(buffer),
            "ours_encode_rps": n / t_enc,
            "ours_no_c_encode_rps": n / t_enc_py,
            "ours_decode_rps": n / t_dec,
            "ours_no_c_decode_rps": n / t_dec_py,
            "c_extension": native.decode_records is not None and native.RecordsBuffer is not None,
        }
        for name, impl in impls.items():
            if impl is None:
                continue
            print(f"[{codec_name}] encode {name} ...", flush=True)
            t, their = best_of(args.repeat, partial(encode_aiokafka, impl, payloads, codec))
            row[f"{name}_encode_rps"] = n / t
            print(f"[{codec_name}] decode {name} ...", flush=True)
            t, count = best_of(args.repeat, partial(decode_aiokafka, impl, their))
            assert count == n, count
            row[f"{name}_decode_rps"] = n / t
            row[f"ratio_encode_vs_{name}"] = row["ours_encode_rps"] / row[f"{name}_encode_rps"]
            row[f"ratio_decode_vs_{name}"] = row["ours_decode_rps"] / row[f"{name}_decode_rps"]
        rows.append(row)

    print()
    print(
        f"{n} records, {VALUE_SIZE}-byte values, batch_size {BATCH_SIZE}; records/s, best of "
        f"{args.repeat}; aiokafka C extension: {results['aiokafka_c_extension']}"
    )
    header = f"{'codec':<8}{'op':<8}{'ours':>12}{'aiokafka C':>12}{'aiokafka py':>13}"
    header += f"{'ours/C':>9}{'ours/py':>9}"
    print(header)
    for row in rows:
        for op in ("encode", "decode"):
            c = row.get(f"aiokafka_c_{op}_rps")
            py = row.get(f"aiokafka_py_{op}_rps")
            ours = row[f"ours_{op}_rps"]
            print(f"{row['codec']:<8}{'(no C)':<8}{row[f'ours_no_c_{op}_rps']:>12,.0f}")
            print(
                f"{row['codec']:<8}{op:<8}{ours:>12,.0f}"
                f"{c if c is None else format(c, ',.0f'):>12}"
                f"{py if py is None else format(py, ',.0f'):>13}"
                f"{'-' if c is None else format(ours / c, '.2f'):>9}"
                f"{'-' if py is None else format(ours / py, '.2f'):>9}"
            )
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(results, f, indent=2)
    print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
