"""Read the brokers' request logs (``KafkaCluster(request_log=True)``) around leader moves.

    python tools/request_trace.py CLUSTER_DIR --around T [T ...] [--window 2]
    python tools/request_trace.py CLUSTER_DIR --around T --node 2     # one broker, in order

T is a wall-clock time (e.g. a move's start). The first form lists, for each T, produce
requests slower than ``--slow-ms`` and replica fetches that waited at least that long in
purgatory; the second lists every produce and replica fetch one broker received, in the
order they arrived, with fetch offsets, errors and bytes returned. Each line: when the
request arrived and completed (relative to T), queue / local / remote (purgatory) times.
This is the evidence behind docs/kip-951.md's account of the per-move stall.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LINE = re.compile(
    r"^\[(?P<ts>[\d-]+ [\d:,]+)\] DEBUG Completed request:(?P<body>\{.*\}) \(kafka\.request\.logger\)$"
)
Event = tuple[int, float, str, str, dict[str, Any]]  # node, completed at, api, client id, body


def parse(path: Path, node: int) -> Iterator[Event]:
    for raw in path.read_text(errors="replace").splitlines():
        m = LINE.match(raw)
        if not m:
            continue
        done = dt.datetime.strptime(m["ts"], "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC).timestamp()
        body = json.loads(m["body"])
        header = body["requestHeader"]
        yield node, done, header["requestApiKeyName"], header["clientId"], body


def describe(api: str, body: dict[str, Any]) -> str:
    req, resp = body.get("request", {}), body.get("response", {})
    if api == "PRODUCE":
        parts = [
            f"{p['index']}:e{p['errorCode']}" for t in resp["responses"] for p in t["partitionResponses"]
        ]
        return f"partitions[{' '.join(parts)}]"
    asked = [f"{p['partition']}@{p['fetchOffset']}" for t in req["topics"] for p in t["partitions"]]
    got = [
        f"{p['partitionIndex']}:e{p['errorCode']}:{p['recordsSizeInBytes']}B"
        for t in resp.get("responses", [])
        for p in t["partitions"]
    ]
    return f"asked[{' '.join(asked)}] got[{' '.join(got)}]"


def show(t0: float, event: Event) -> str:
    node, done, api, client, body = event
    total = body["totalTimeMs"]
    return (
        f"node {node} {api:<7} {client:<26} in {done - total / 1000 - t0:+.3f}s out {done - t0:+.3f}s "
        f"queue {body['requestQueueTimeMs']:4.0f} local {body['localTimeMs']:4.0f} "
        f"remote {body['remoteTimeMs']:4.0f} ms  {describe(api, body)}"
    )


def relevant(event: Event) -> bool:
    _, _, api, client, _ = event
    return api == "PRODUCE" or (api == "FETCH" and client.startswith("broker-"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cluster_dir", type=Path)
    parser.add_argument("--around", type=float, nargs="+", required=True)
    parser.add_argument("--window", type=float, default=2.0)
    parser.add_argument("--slow-ms", type=float, default=150.0)
    parser.add_argument("--node", type=int, help="every produce and replica fetch of this broker")
    args = parser.parse_args()
    events: list[Event] = []
    for log in sorted(args.cluster_dir.glob("node-*/logs/requests.log")):
        events.extend(parse(log, int(log.parent.parent.name.split("-")[1])))
    events = [e for e in events if relevant(e)]
    events.sort(key=lambda e: e[1] - e[4]["totalTimeMs"] / 1000)  # by arrival
    for t0 in args.around:
        print(f"\n=== around {t0:.3f} ===")
        for e in events:
            arrived = e[1] - e[4]["totalTimeMs"] / 1000
            if not t0 - 0.5 <= arrived <= t0 + args.window:
                continue
            if args.node is not None:
                if e[0] == args.node:
                    print(show(t0, e))
                continue
            slow = e[4]["totalTimeMs"] if e[2] == "PRODUCE" else e[4]["remoteTimeMs"]
            if slow >= args.slow_ms:
                print(show(t0, e))


if __name__ == "__main__":
    main()
