"""Resource configurations: describe, alter (incremental and whole-resource).

Broker resources are asked of that broker, everything else of any broker, one request per
broker and one for the rest. :class:`ConfigsCore` returns the raw responses in that order
(brokers first, as aiokafka orders them); :class:`ConfigsMixin` (the typed
``AdminClient``) builds ``{(type, name): {key: ConfigEntry}}`` and raises per-resource
errors. Configs reach every broker asynchronously, as in Java.

Two ways to alter: IncrementalAlterConfigs (KIP-339) changes only the keys named (the
typed client's ``alter_configs``); AlterConfigs replaces the resource's whole dynamic
configuration, every key not named going back to its default (aiokafka's
``alter_configs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiokafka_lead.admin.types import AlterConfigOp, ConfigEntry, ConfigResource, ConfigResourceType
from aiokafka_lead.core.client import guarded
from aiokafka_lead.protocol.messages import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from aiokafka_lead.requests.base import RequestBase, check_answered, raise_item_errors

BROKER = int(ConfigResourceType.BROKER)


def config_node(resource: ConfigResource) -> int | None:
    """Broker configs must be asked of that broker; everything else of any broker."""
    if resource.type_code == BROKER and str(resource.name).isdigit():
        return int(resource.name)
    return None


def by_node(resources: Sequence[ConfigResource]) -> list[tuple[int | None, list[ConfigResource]]]:
    """Resources per node to ask: each broker's own (in first-seen order), then the rest."""
    groups: dict[int | None, list[ConfigResource]] = {}
    for res in resources:
        groups.setdefault(config_node(res), []).append(res)
    return [(n, rs) for n, rs in groups.items() if n is not None] + (
        [(None, groups[None])] if None in groups else []
    )


class ConfigsCore(RequestBase):
    """The config requests both clients share."""

    async def _send_config_request(self, what: str, node: int | None, request: Any, answers: str) -> Any:
        """Send one config request (to ``node``, or any broker) and check that its ``answers``
        list answers every resource the request named."""

        async def attempt() -> Any:
            if node is None:
                return await self._send_any(request)
            return await self._core.send(node, request)

        response = await self._retrying(what, attempt, None)
        check_answered(
            f"{what} from {self.answered_by}",
            answers,
            [(r.resource_type, r.resource_name) for r in request.resources],
            [(r.resource_type, r.resource_name) for r in getattr(response, answers)],
        )
        return response

    async def _describe_configs(
        self, resources: Sequence[ConfigResource], include_synonyms: bool
    ) -> list[tuple[str, Any]]:
        """One DescribeConfigs response per node asked (see :func:`by_node`), each with the
        broker that answered it."""
        out = []
        for node, group in by_node(resources):
            request = DescribeConfigsRequest(
                resources=[
                    DescribeConfigsRequest.DescribeConfigsResource(
                        resource_type=r.type_code,
                        resource_name=str(r.name),
                        configuration_keys=None if not r.configs else list(r.configs),
                    )
                    for r in group
                ],
                include_synonyms=include_synonyms,
            )
            response = await self._send_config_request("DescribeConfigs", node, request, "results")
            out.append((self.answered_by, response))
        return out

    async def _alter_configs_whole(self, resources: Sequence[ConfigResource]) -> list[Any]:
        """AlterConfigs: one response for the non-broker resources (always asked, as
        aiokafka does, even with none), then one per broker."""
        groups = dict(by_node(resources))
        order: list[int | None] = [None, *(n for n in groups if n is not None)]
        out = []
        for node in order:
            request = AlterConfigsRequest(
                resources=[
                    AlterConfigsRequest.AlterConfigsResource(
                        resource_type=r.type_code,
                        resource_name=str(r.name),
                        configs=[
                            AlterConfigsRequest.AlterableConfig(name=k, value=v)
                            for k, v in (r.configs or {}).items()
                        ],
                    )
                    for r in groups.get(node, [])
                ],
                validate_only=False,
            )
            response = await self._send_config_request("AlterConfigs", node, request, "responses")
            out.append(response)
        return out


class ConfigsMixin(ConfigsCore):
    """The typed config methods of ``AdminClient``."""

    @guarded
    async def describe_configs(
        self, config_resources: Sequence[ConfigResource], include_synonyms: bool = False
    ) -> dict[tuple[int, str], dict[str, ConfigEntry]]:
        """Describe configs; returns {(resource_type, name): {config name: ConfigEntry}}."""
        out: dict[tuple[int, str], dict[str, ConfigEntry]] = {}
        for broker, response in await self._describe_configs(config_resources, include_synonyms):
            raise_item_errors(
                "DescribeConfigs",
                [(r.resource_name, r.error_code, r.error_message) for r in response.results if r.error_code],
                broker=broker,
            )
            for r in response.results:
                out[(r.resource_type, r.resource_name)] = {
                    c.name: ConfigEntry(c.name, c.value, c.read_only, c.is_sensitive, c.config_source)
                    for c in r.configs
                }
        return out

    @guarded
    async def alter_configs(
        self, config_resources: Sequence[ConfigResource], op: AlterConfigOp = AlterConfigOp.SET
    ) -> None:
        """IncrementalAlterConfigs: SET each given key (a None value DELETEs it)."""
        for node, resources in by_node(config_resources):
            request = IncrementalAlterConfigsRequest(
                resources=[
                    IncrementalAlterConfigsRequest.AlterConfigsResource(
                        resource_type=r.type_code,
                        resource_name=str(r.name),
                        configs=[
                            IncrementalAlterConfigsRequest.AlterableConfig(
                                name=k,
                                config_operation=int(AlterConfigOp.DELETE if v is None else op),
                                value=v,
                            )
                            for k, v in sorted((r.configs or {}).items())
                        ],
                    )
                    for r in resources
                ],
                validate_only=False,
            )
            response = await self._send_config_request("IncrementalAlterConfigs", node, request, "responses")
            raise_item_errors(
                "IncrementalAlterConfigs",
                [
                    (r.resource_name, r.error_code, r.error_message)
                    for r in response.responses
                    if r.error_code
                ],
            )

    incremental_alter_configs = alter_configs
