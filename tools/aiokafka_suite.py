"""aiokafka 0.14's own test suite, run against aiokafka_lead (and against aiokafka itself).

    python tools/aiokafka_suite.py [--tests-from DIR] [--real-results XML] [--report MD] [FILES or IDS...]

1. Downloads aiokafka 0.14.0's source distribution from PyPI (``pip download --no-deps
   --no-binary :all:``) into ``~/.cache/aiokafka_lead/`` and looks for its ``tests/``. The
   sdist on PyPI leaves ``tests/`` out (its MANIFEST.in excludes it): the runner says so,
   then takes the suite from ``--tests-from DIR`` (or ``$AIOKAFKA_SUITE_TESTS``): a checkout
   of aiokafka's repository at v0.14.0 (``DIR/tests`` or ``DIR`` itself holding
   ``conftest.py``), copied into the cache, where later runs find it.
2. Runs the suite's files unchanged, twice, each on a one-node cluster of our harness
   started by ``tools/aiokafka_suite_plugin.py`` (which replaces aiokafka's Docker start):
   with the real aiokafka, then with ``aiokafka`` resolving to aiokafka_lead
   (``-p aiokafka_lead.testing.aiokafka_alias``).
3. Classifies each test (passes on both; fails on ours on the public API; reaches into
   aiokafka's internals, naming them; handled by other work; needs SASL/ACL tooling) and
   writes ``benchmarks/results/aiokafka_suite.md``.

Progress goes to stdout (one line per test), a summary at the end. Nothing of aiokafka's
is committed: the sdist and the suite stay in the cache.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import os
import re
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION = "0.14.0"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "aiokafka_lead"
SUITE_CACHE = CACHE / f"aiokafka-{VERSION}-tests"
RUN_DIR = CACHE / f"aiokafka-{VERSION}-suite"
TESTS_ENV = "AIOKAFKA_SUITE_TESTS"
REPORT = ROOT / "benchmarks" / "results" / "aiokafka_suite.md"
#: the suite's files that run against a broker through the public clients
FILES = (
    "tests/test_admin.py",
    "tests/test_consumer.py",
    "tests/test_pep492.py",
    "tests/test_producer.py",
    "tests/test_transactional_consumer.py",
    "tests/test_transactional_producer.py",
    "tests/test_sasl.py",
)
#: aiokafka's pytest settings (its pyproject.toml), which its tests rely on
PYTEST_INI = """\
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings =
    error
    default:unclosed event loop:ResourceWarning
"""
ALIAS_PLUGIN = "aiokafka_lead.testing.aiokafka_alias"
SUITE_PLUGIN = "aiokafka_suite_plugin"

#: Tests that other work makes pass: a consumer without a group on a missing topic, and
#: a consumer created outside a running loop.
NO_GROUP_WORK = frozenset(
    {
        "tests/test_consumer.py::TestConsumerIntegration::test_consumer_wait_topic",
        "tests/test_consumer.py::TestConsumerIntegration::test_consumer_commit_no_group",
        "tests/test_consumer.py::TestConsumerIntegration::test_create_consumer_no_running_loop",
        "tests/test_transactional_consumer.py::TestKafkaConsumerIntegration::test_consumer_transactional_commit",
        "tests/test_transactional_consumer.py::TestKafkaConsumerIntegration::test_consumer_transactional_abort",
    }
)
#: Tests that fail only on the private names frameworks read (``producer.client``,
#: ``consumer._client``, ``_group_id``, ``_subscription``, ...), which other work provides,
#: and pass with it. None so far: a run with those names in place showed that every test
#: reading them goes on into AIOKafkaClient (``add_topic``, ``send``) or other internals.
PRIVATE_NAMES_WORK: frozenset[str] = frozenset()
#: Helpers of aiokafka's test files that patch its internals (their failure messages
#: do not name them): a test calling one reaches into what it names.
INTERNAL_HELPERS = {
    "count_fetch_requests": "aiokafka.consumer.fetcher.PartitionRecords (patched by count_fetch_requests)",
}
#: Names a failure message may show that are aiokafka internals though not private.
INTERNAL_PUBLIC_NAMES = frozenset({"client", "cluster", "AIOKafkaClient", "ClusterMetadata"})


@dataclass(frozen=True)
class Outcome:
    passed: bool
    skipped: bool
    message: str


@dataclass(frozen=True)
class Verdict:
    category: str
    detail: str


PASS = "passes on both"
PUBLIC = "fails on ours: public API"
INTERNALS = "reaches into aiokafka internals"
ELSEWHERE = "handled elsewhere"
SECURITY = "needs SASL/ACL tooling"
REAL_FAILS = "fails with the real aiokafka too"
CATEGORIES = (PASS, PUBLIC, INTERNALS, ELSEWHERE, SECURITY, REAL_FAILS)


def log(message: str) -> None:
    print(message, flush=True)


# ------------------------------------------------------------------ the suite's files
def download_sdist() -> Path:
    """aiokafka's sdist from PyPI, in the cache (downloaded once)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / f"aiokafka-{VERSION}.tar.gz"
    if not tarball.exists():
        log(f"downloading aiokafka {VERSION}'s source distribution from PyPI into {CACHE}")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             "-d", str(CACHE), f"aiokafka=={VERSION}"],
            check=True,
        )  # fmt: skip
    return tarball


def sdist_tests(tarball: Path) -> Path | None:
    """The sdist's ``tests/``, extracted into the cache; None when the sdist has none."""
    with tarfile.open(tarball) as archive:
        members = [m for m in archive.getmembers() if m.name.split("/")[1:2] == ["tests"]]
        if not members:
            return None
        target = CACHE / "sdist"
        archive.extractall(target, members=members, filter="data")
    return target / f"aiokafka-{VERSION}" / "tests"


def _suite_in(directory: Path) -> Path | None:
    for candidate in (directory / "tests", directory):
        if (candidate / "conftest.py").is_file() and (candidate / "test_producer.py").is_file():
            return candidate
    return None


def locate_suite(tests_from: str | None) -> Path:
    """aiokafka 0.14.0's ``tests/``: from the sdist, else from ``tests_from`` / the cache."""
    found = sdist_tests(download_sdist())
    if found is not None:
        log(f"the sdist carries tests/: {found}")
        return found
    log(f"aiokafka {VERSION}'s sdist on PyPI has no tests/ (its MANIFEST.in excludes them)")
    source = tests_from or os.environ.get(TESTS_ENV)
    if source:
        suite = _suite_in(Path(source).expanduser())
        if suite is None:
            raise SystemExit(f"{source}: no aiokafka tests/ there (conftest.py, test_producer.py)")
        _check_version(suite.parent)
        if SUITE_CACHE.exists():
            shutil.rmtree(SUITE_CACHE)
        shutil.copytree(suite, SUITE_CACHE / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        log(f"using {suite} (copied to {SUITE_CACHE})")
        return SUITE_CACHE / "tests"
    cached = _suite_in(SUITE_CACHE)
    if cached is not None:
        log(f"using the suite cached by an earlier run: {cached}")
        return cached
    raise SystemExit(
        f"no aiokafka {VERSION} tests/: pass --tests-from DIR (a checkout of aiokafka's "
        f"repository at v{VERSION}) or set {TESTS_ENV}"
    )


def suite_available() -> bool:
    """Can a run find the suite without being told where (the cache, or the sdist's)?"""
    sdist = CACHE / "sdist" / f"aiokafka-{VERSION}"
    return _suite_in(SUITE_CACHE) is not None or _suite_in(sdist) is not None


def _check_version(checkout: Path) -> None:
    init = checkout / "aiokafka" / "__init__.py"
    if init.is_file():
        match = re.search(r"__version__\s*=\s*[\"']([^\"']+)", init.read_text(encoding="utf-8"))
        if match and match.group(1) != VERSION:
            raise SystemExit(f"{checkout} is aiokafka {match.group(1)}, not {VERSION}")


def prepare_run_dir(suite: Path) -> Path:
    """A directory with the suite's files (unchanged) and aiokafka's pytest settings, and
    no ``aiokafka`` package of its own (the run imports the installed one or the alias)."""
    if RUN_DIR.exists():
        shutil.rmtree(RUN_DIR)
    shutil.copytree(suite, RUN_DIR / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    (RUN_DIR / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    return RUN_DIR


# ------------------------------------------------------------------ running
def pytest_command(flavour: str, selection: Sequence[str], junit: Path) -> list[str]:
    alias = ["-p", ALIAS_PLUGIN] if flavour == "lead" else []
    return [
        sys.executable, "-m", "pytest", *alias, "--noconftest", "-p", SUITE_PLUGIN,
        "-p", "no:randomly", "-p", "no:cacheprovider", "-v", "--junitxml", str(junit), *selection,
    ]  # fmt: skip


def run_suite(flavour: str, run_dir: Path, selection: Sequence[str], junit: Path) -> int:
    """One pytest run of ``selection`` (files or test ids); its lines go to stdout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tools"), env.get("PYTHONPATH", "")])
    log(f"--- {flavour}: pytest {' '.join(selection) if len(selection) < 8 else f'{len(selection)} tests'}")
    with subprocess.Popen(
        pytest_command(flavour, selection, junit),
        cwd=run_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            outcome = "::" in line and any(w in line for w in ("PASSED", "FAILED", "ERROR", "SKIPPED"))
            if outcome or line.startswith(("=", "[kafka")):
                log(f"[{flavour}] {line.rstrip()}")
        return proc.wait()


def read_junit(path: Path) -> dict[str, Outcome]:
    """Test id (``tests/file.py::Class::test``) -> outcome; a setup or teardown error counts."""
    out: dict[str, Outcome] = {}
    for case in ET.parse(path).iter("testcase"):
        parts = (case.get("classname") or "").split(".")
        module = "/".join(p for p in parts if p[:1].islower())
        classes = [p for p in parts if p[:1].isupper()]
        test_id = "::".join([f"{module}.py", *classes, case.get("name") or ""])
        problems = [c for c in case if c.tag in ("failure", "error")]
        skipped = any(c.tag == "skipped" for c in case)
        text = " | ".join(f"{c.get('message') or ''}\n{c.text or ''}" for c in problems)
        previous = out.get(test_id)
        passed = not problems and not skipped and (previous is None or previous.passed)
        message = "\n".join(m for m in ((previous.message if previous else ""), text) if m)
        out[test_id] = Outcome(passed, skipped, message)
    return out


# ------------------------------------------------------------------ classification
_NAME_PATTERNS = (
    re.compile(r"aiokafka internal (aiokafka[\w.]+)"),
    # aiokafka_lead's stand-in for aiokafka's client (producer.client, consumer._client)
    # has only what frameworks read: another attribute is AIOKafkaClient's
    re.compile(r"AIOKafkaClientView\b\W.*?attribute '(\w+)'"),
    re.compile(r"has no attribute '(\w+)'"),
    re.compile(r"does not have the attribute '(\w+)'"),
    re.compile(r"cannot import name '(\w+)'"),
    re.compile(r"No module named '([\w.]+)'"),
)


def internal_names(message: str) -> list[str]:
    """The aiokafka internals a failure message names (first one first)."""
    found: list[str] = []
    for pattern in _NAME_PATTERNS:
        for found_name in pattern.findall(message):
            name = f"AIOKafkaClient.{found_name}" if "AIOKafkaClientView" in pattern.pattern else found_name
            leaf = name.rsplit(".", 1)[-1]
            internal = (
                name.startswith(("aiokafka.", "AIOKafkaClient."))
                or leaf.startswith("_")
                or leaf in INTERNAL_PUBLIC_NAMES
            )
            if internal and name not in found:
                found.append(name)
    return found


def _test_function(test_id: str, run_dir: Path) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    path = run_dir / test_id.split("::", 1)[0]
    name = test_id.rsplit("::", 1)[-1]
    if not path.is_file():
        return None
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    return None


def helpers_used(test_id: str, run_dir: Path = RUN_DIR) -> list[str]:
    """The internals the test reaches through its file's helpers (``INTERNAL_HELPERS``)."""
    node = _test_function(test_id, run_dir)
    if node is None:
        return []
    calls = (n for n in ast.walk(node) if isinstance(n, ast.Call))
    called = {c.func.attr for c in calls if isinstance(c.func, ast.Attribute)}
    return [what for helper, what in INTERNAL_HELPERS.items() if helper in called]


def private_attributes(test_id: str, run_dir: Path = RUN_DIR) -> list[str]:
    """Private attributes the test reads of objects other than itself (``x._loop``): what
    a failure shows only indirectly (an error swallowed by a callback, a wrong value)."""
    node = _test_function(test_id, run_dir)
    if node is None:
        return []
    found = {
        n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute)
        and n.attr.startswith("_")
        and not n.attr.startswith("__")
        and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"))
    }
    return sorted(found)


def classify(test_id: str, real: Outcome | None, lead: Outcome | None) -> Verdict:
    in_security_file = test_id.startswith("tests/test_sasl.py")
    if real is None or not real.passed:
        if in_security_file:
            return Verdict(SECURITY, "ACLs and SCRAM users set with ZooKeeper-era tools, a KDC")
        return Verdict(REAL_FAILS, _first_line(real.message if real else "not run"))
    if lead is not None and lead.passed:
        return Verdict(PASS, "")
    message = lead.message if lead is not None else "not run"
    if test_id in NO_GROUP_WORK:
        return Verdict(ELSEWHERE, "a consumer without a group / outside a running loop")
    names = internal_names(message) + helpers_used(test_id)
    if test_id in PRIVATE_NAMES_WORK:
        return Verdict(ELSEWHERE, "private names frameworks read: " + ", ".join(names))
    if names:
        return Verdict(INTERNALS, ", ".join(names))
    private = private_attributes(test_id)
    if private:  # the message names nothing: what the test reads of aiokafka's privates
        return Verdict(INTERNALS, "reads " + ", ".join(private) + ": " + _first_line(message))
    return Verdict(PUBLIC, _first_line(message))


def _first_line(message: str) -> str:
    for line in message.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


# ------------------------------------------------------------------ report
def write_report(
    verdicts: dict[str, Verdict], real_version: str, commands: Iterable[str], path: Path = REPORT
) -> None:
    from aiokafka_lead import __version__ as lead_version
    from aiokafka_lead.testing.cluster import jars

    counts = {c: sum(v.category == c for v in verdicts.values()) for c in CATEGORIES}
    lines = [
        "# aiokafka 0.14's test suite against aiokafka_lead",
        "",
        f"Run {datetime.date.today().isoformat()}: aiokafka {real_version} (its tests/ at v{VERSION}), "
        f"aiokafka_lead {lead_version}, Kafka {jars.DEFAULT_KAFKA_VERSION} (one KRaft node of the harness, "
        "PLAINTEXT, SSL, SASL listeners, 2 partitions per topic), Python "
        f"{sys.version.split()[0]}. Produced by `tools/aiokafka_suite.py`:",
        "",
        *(f"    {c}" for c in commands),
        "",
        "The suite's files run unchanged; `tools/aiokafka_suite_plugin.py` provides the fixtures "
        "of its conftest.py (which starts Docker) and waits for a topic in `send_messages` through "
        "the public `partitions_for()`. Under the alias, a name the test modules import that "
        "aiokafka_lead lacks is a placeholder that fails the test when used.",
        "",
        "| category | tests |",
        "|---|---|",
        *(f"| {c} | {counts[c]} |" for c in CATEGORIES),
        "",
    ]
    for category in CATEGORIES:
        ids = sorted(t for t, v in verdicts.items() if v.category == category)
        if not ids:
            continue
        lines += [f"## {category} ({len(ids)})", ""]
        for test_id in ids:
            detail = verdicts[test_id].detail.replace("|", "/")
            lines.append(f"- `{test_id}`" + (f": {detail}" if detail else ""))
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")


def summary(verdicts: dict[str, Verdict]) -> str:
    counts = {c: sum(v.category == c for v in verdicts.values()) for c in CATEGORIES}
    return ", ".join(f"{counts[c]} {c}" for c in CATEGORIES)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tests-from", help="a checkout of aiokafka's repository at v0.14.0")
    parser.add_argument("--report", type=Path, default=REPORT, help="where the classification goes")
    parser.add_argument(
        "--real-results", type=Path, help="the real aiokafka's JUnit XML of an earlier run (not run again)"
    )
    parser.add_argument(
        "--ids-out",
        type=Path,
        help="write the public-API tests (passing with the real aiokafka) here, for make test's run",
    )
    parser.add_argument("selection", nargs="*", help=f"files or test ids (default: {' '.join(FILES)})")
    args = parser.parse_args(argv)
    import aiokafka

    run_dir = prepare_run_dir(locate_suite(args.tests_from))
    selection = args.selection or list(FILES)
    outcomes: dict[str, dict[str, Outcome]] = {}
    if args.real_results is not None:
        outcomes["real"] = read_junit(args.real_results)
    for flavour in ("real", "lead"):
        if flavour in outcomes:
            continue
        junit = run_dir / f"{flavour}.xml"
        run_suite(flavour, run_dir, selection, junit)
        outcomes[flavour] = read_junit(junit)
    # with the real aiokafka's results of an earlier run, the tests this run ran
    ran = set(outcomes["lead"]) if args.real_results else set(outcomes["real"]) | set(outcomes["lead"])
    ids = sorted(ran)
    verdicts = {t: classify(t, outcomes["real"].get(t), outcomes["lead"].get(t)) for t in ids}
    shown = " ".join(argv if argv is not None else sys.argv[1:])
    command = f"python tools/aiokafka_suite.py {shown}".rstrip()
    write_report(verdicts, aiokafka.__version__, [command], args.report)
    log(f"summary: {len(ids)} tests: {summary(verdicts)}")
    for category in (PUBLIC, INTERNALS, ELSEWHERE):
        for test_id in ids:
            if verdicts[test_id].category == category:
                log(f"  {category}: {test_id}: {verdicts[test_id].detail}")
    log(f"written: {args.report}")
    if args.ids_out is not None:
        public = [t for t in ids if verdicts[t].category in (PASS, PUBLIC, ELSEWHERE)]
        header = (
            "# aiokafka 0.14's tests of its public API that pass with the real aiokafka on the\n"
            "# harness's cluster (tools/aiokafka_suite.py --ids-out; classification in\n"
            "# benchmarks/results/aiokafka_suite.md): tests/integration/test_aiokafka_suite.py\n"
        )
        args.ids_out.write_text(header + "\n".join(public) + "\n", encoding="utf-8")
        log(f"written: {args.ids_out} ({len(public)} tests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
