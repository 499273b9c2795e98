"""The ``aiokafka-lead`` console command.

``topics``, ``elect-leaders``, ``reassign`` and ``share-groups`` ship with the wheel; ``demo`` and ``cluster``
are this repository's harness (the leader-move demo, the jar cluster's command line) and
are offered where it is present: in a checkout.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
from collections.abc import Sequence

import anyio

from aiokafka_lead.cli import elect, reassign, share_groups, topics
from aiokafka_lead.config.properties import ClientConfigError, load_client_config
from aiokafka_lead.errors import KafkaError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aiokafka-lead",
        description="aiokafka_lead: Kafka administration and demos with KIP-951 leader discovery",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    topics.add_parser(sub)
    elect.add_parser(sub)
    reassign.add_parser(sub)
    share_groups.add_parser(sub)
    if _present("aiokafka_lead.cli.demo"):
        from aiokafka_lead.cli import demo

        demo.add_parser(sub)
    if _present(CLUSTER_CLI):
        sub.add_parser(
            "cluster",
            help="a local KRaft cluster (same as python -m aiokafka_lead.testing.cluster)",
            add_help=False,
        )
    return parser


CLUSTER_CLI = "aiokafka_lead.testing.cluster.__main__"


def _present(module: str) -> bool:
    """A harness module is there (a checkout; the wheel leaves them out)."""
    return importlib.util.find_spec(module) is not None


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["cluster"] and _present(CLUSTER_CLI):
        cluster_main = importlib.import_module(CLUSTER_CLI).main
        code: int = cluster_main(args_list[1:])
        return code
    parser = build_parser()
    args = parser.parse_args(args_list)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        client_kwargs = load_client_config(args.admin_config) if getattr(args, "admin_config", None) else {}
        code = anyio.run(args.run, args, client_kwargs)
    except KafkaError as exc:  # incl. KafkaConfigurationError: a bad --bootstrap-server exits 1
        print(f"aiokafka-lead: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except (ValueError, ClientConfigError) as exc:
        parser.exit(2, f"aiokafka-lead: error: {exc}\n")
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
