"""Each option is declared once: the constructors' signatures, the validation and
docs/configuration.md all agree with the declarations, and every part reads one config."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from aiokafka_lead import AIOKafkaAdminClient, AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.abc import AbstractTokenProvider
from aiokafka_lead.admin import AdminClient
from aiokafka_lead.admin.config import AdminConfig
from aiokafka_lead.admin.keywords import AdminKeywords
from aiokafka_lead.config.options import Options
from aiokafka_lead.consumer.config import ConsumerConfig
from aiokafka_lead.consumer.keywords import ConsumerKeywords
from aiokafka_lead.errors import KafkaConfigurationError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.producer.config import ProducerConfig
from aiokafka_lead.producer.keywords import ProducerKeywords
from aiokafka_lead.share import AIOKafkaShareConsumer
from aiokafka_lead.share.config import ShareConsumerConfig
from aiokafka_lead.share.keywords import ShareConsumerKeywords

ROOT = Path(__file__).resolve().parents[2]
#: constructor parameters that are not options: the consumer's topics, aiokafka's loop=
NOT_OPTIONS = {"self", "topics", "loop", "unsupported"}
KEYWORDS: list[tuple[type, type[Options]]] = [
    (ProducerKeywords, ProducerConfig),
    (ConsumerKeywords, ConsumerConfig),
    (AdminKeywords, AdminConfig),
    (ShareConsumerKeywords, ShareConsumerConfig),
]


@pytest.mark.parametrize(("keywords", "config"), KEYWORDS)
def test_constructor_signatures_match_the_declarations(keywords: type, config: type[Options]) -> None:
    """Names, order, defaults and annotations: the generated keywords are the declarations'
    (a stale ``*/keywords.py`` fails here and in ``tools/gen_keywords.py --check``)."""
    params = [
        (name, p.default, p.annotation)
        for name, p in inspect.signature(keywords.__init__).parameters.items()
        if name not in NOT_OPTIONS
    ]
    assert params == [(d.name, d.default, d.annotation) for d in config.keywords()]


@pytest.mark.parametrize(
    ("client", "keywords"),
    [
        (AIOKafkaProducer, ProducerKeywords),
        (AIOKafkaConsumer, ConsumerKeywords),
        (AdminClient, AdminKeywords),
        (AIOKafkaShareConsumer, ShareConsumerKeywords),
    ],
)
def test_the_public_classes_show_the_declared_keywords(client: type, keywords: type) -> None:
    """IDEs and inspect.signature see the explicit keywords on the public classes."""
    assert inspect.signature(client) == inspect.signature(keywords)
    assert "request_timeout_ms" in inspect.signature(client).parameters


def test_one_request_timeout_default_everywhere() -> None:
    assert ConnectionConfig().request_timeout_ms == 40_000
    for keywords, _ in KEYWORDS:
        assert inspect.signature(keywords.__init__).parameters["request_timeout_ms"].default == 40_000


def test_every_part_of_a_client_reads_the_one_config_it_was_built_with() -> None:
    consumer = AIOKafkaConsumer("t", group_id="g", request_timeout_ms=12_345)
    config = consumer._config
    assert config.request_timeout_ms == 12_345
    assert consumer._core.config is config
    assert consumer._fetcher._config is config
    assert consumer._coordinator is not None and consumer._coordinator._config is config  # type: ignore[attr-defined]
    producer = AIOKafkaProducer(linger_ms=7)
    assert producer._core.config is producer._config
    assert producer._acc._config is producer._config
    assert producer._config.linger_s == 0.007
    admin = AIOKafkaAdminClient(request_timeout_ms=4321)
    assert admin._request_timeout_ms == 4321
    share = AIOKafkaShareConsumer("t", group_id="g", request_timeout_ms=2345, fetch_max_wait_ms=77)
    assert share._core.config is share._config
    assert share._config.request_timeout_ms == 2345
    assert share._member._config is share._config
    assert share._fetcher._parts.config is share._config  # read where it acts, never copied
    assert share._config.fetch_max_wait_ms == 77


#: calls that pass a value on: a setting read through them is still a setting
PASS_THROUGH = frozenset({"abs", "bool", "float", "int", "max", "min", "round", "str"})
#: attributes that hold an object made from a setting, not the setting: (module, attribute)
NOT_COPIES = {
    ("aiokafka_lead/producer/producer.py", "_partitioner"),  # the user's, or a default made here
}


def _reads_setting(node: ast.AST) -> bool:
    """``config.x``, ``<...>.config.x`` or ``<...>._config.x``, alone or computed on; a
    setting handed to a constructor or a function is that call's, not a copy."""
    if isinstance(node, ast.Attribute) and (
        (isinstance(node.value, ast.Name) and node.value.id == "config")
        or (isinstance(node.value, ast.Attribute) and node.value.attr in {"config", "_config"})
    ):
        return True
    if isinstance(node, ast.Call):
        passes_on = isinstance(node.func, ast.Name) and node.func.id in PASS_THROUGH
        return passes_on and any(_reads_setting(arg) for arg in node.args)
    if isinstance(node, ast.Lambda):
        return False
    return any(_reads_setting(child) for child in ast.iter_child_nodes(node))


def _setting_copies(source: str) -> list[tuple[int, str]]:
    """(line, attribute) of each ``self.<attribute> = <a setting>`` in ``source``."""
    copies = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                    and _reads_setting(node.value)
                ):
                    copies.append((node.lineno, target.attr))
    return copies


def test_the_copy_check_tells_a_copied_setting_from_one_handed_on() -> None:
    source = """
class Part:
    def __init__(self, config, core):
        self._config = config
        self._timeout_ms = config.request_timeout_ms
        self._linger_s = self._config.linger_ms / 1000
        self._wait_ms = min(core.config.request_timeout_ms, 2000)
        self._reader = FrameReader(config.max_frame_size)
        self._on_fail = lambda: core.config.client_id
"""
    assert [attribute for _, attribute in _setting_copies(source)] == ["_timeout_ms", "_linger_s", "_wait_ms"]


def test_no_part_copies_a_setting_into_an_attribute() -> None:
    """Each part reads its settings from the config object where they act (DESIGN.md
    invariant 31); a value derived once for a hot path is the config class's property."""
    copies = []
    for path in sorted((ROOT / "aiokafka_lead").rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        if "/protocol/generated/" in module:
            continue
        copies += [
            f"{module}:{line} self.{attribute}"
            for line, attribute in _setting_copies(path.read_text())
            if (module, attribute) not in NOT_COPIES
        ]
    assert copies == []


class Tokens(AbstractTokenProvider):
    async def token(self) -> str:
        return "t"


def _share_consumer(**kwargs: Any) -> AIOKafkaShareConsumer[Any, Any]:
    return AIOKafkaShareConsumer(group_id="g", **kwargs)


@pytest.mark.parametrize("client", [AIOKafkaProducer, AIOKafkaConsumer, AIOKafkaAdminClient, _share_consumer])
def test_oauth_and_kerberos_keywords_reach_the_connection_config(client: Any) -> None:
    tokens = Tokens()
    c = client(sasl_oauth_token_provider=tokens, sasl_kerberos_domain_name="example.com")
    config = c._core.config
    assert config.sasl_oauth_token_provider is tokens
    assert config.sasl_kerberos_service_name == "kafka"
    assert config.sasl_kerberos_domain_name == "example.com"
    with pytest.raises(KafkaConfigurationError, match="sasl_oauth_token_provider must implement token"):
        client(sasl_oauth_token_provider="token")
    with pytest.raises(KafkaConfigurationError, match="sasl_kerberos_service_name must be a string"):
        client(sasl_kerberos_service_name=None)


def test_producers_without_a_client_id_get_one_each() -> None:
    a, b = ProducerConfig(), ProducerConfig()
    assert a.client_id != b.client_id
    assert str(a.client_id).startswith("aiokafka-lead-producer-")
    assert ProducerConfig(client_id="mine").client_id == "mine"


def _generator(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_the_configuration_reference_is_generated_from_the_declarations() -> None:
    gen = _generator("gen_config_docs")
    text = (ROOT / "docs" / "configuration.md").read_text()
    assert text == gen.render(), "run python tools/gen_config_docs.py"
    assert gen.main(["--check"]) == 0
    for config in (ProducerConfig, ConsumerConfig, AdminConfig, ShareConsumerConfig):
        for d in config.declared():
            assert f"| `{d.name}` |" in text


def test_the_constructor_keywords_are_generated_from_the_declarations() -> None:
    gen = _generator("gen_keywords")
    for client in gen.CLIENTS:
        assert client.target.read_text() == gen.render(client), "run python tools/gen_keywords.py"
    assert gen.main(["--check"]) == 0


def test_a_declared_keyword_order_names_only_keyword_options() -> None:
    class Misordered(AdminConfig):
        KEYWORD_ORDER = ("client_id", "connect_timeout_ms")

    with pytest.raises(ValueError, match=r"KEYWORD_ORDER names no keyword option: \['connect_timeout_ms'\]"):
        Misordered.keywords()
    assert [d.name for d in AdminConfig.keywords()][:2] == ["bootstrap_servers", "client_id"]


@pytest.mark.parametrize("config", [ConsumerConfig, lambda **kw: ShareConsumerConfig(group_id="g", **kw)])
def test_fetch_min_bytes_above_fetch_max_bytes_is_refused(config: Any) -> None:
    with pytest.raises(KafkaConfigurationError, match="fetch_min_bytes must not exceed fetch_max_bytes"):
        config(fetch_min_bytes=10, fetch_max_bytes=5)
    assert config(fetch_min_bytes=5, fetch_max_bytes=5).fetch_min_bytes == 5
