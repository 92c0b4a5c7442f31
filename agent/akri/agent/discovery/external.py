"""A handler in another process, reached over `discovery.proto` (`v0.DiscoveryHandler`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass

import grpc

from akri.discovery.convert import request_to_proto, response_from_proto
from akri.discovery.endpoints import Endpoint
from akri.discovery.model import Device, DiscoveryError, HandlerUnavailable, InvalidDetails
from akri.proto.discovery.v0 import discovery_pb2 as pb
from akri.proto.discovery.v0.discovery_pb2_grpc import DiscoveryHandlerStub


@dataclass(frozen=True, eq=False)
class ExternalHandler:
    """One registered endpoint; each `discover` call is one `Discover` stream on its own channel.

    The stream ends when the handler ends it; the caller treats that as the handler stopping.
    """

    name: str
    endpoint: Endpoint
    shared: bool

    async def discover(
        self, details: str, properties: Mapping[str, bytes]
    ) -> AsyncGenerator[list[Device], None]:
        async with grpc.aio.insecure_channel(self.endpoint.target) as channel:
            call = DiscoveryHandlerStub(channel).Discover(request_to_proto(details, properties))
            try:
                # read() rather than `async for`: grpc's hidden iterator would be left for the
                # garbage collector to close when the caller stops early.
                while isinstance(response := await call.read(), pb.DiscoverResponse):
                    yield response_from_proto(response)
            except grpc.aio.AioRpcError as error:
                raise self._error(error) from error

    def _error(self, error: grpc.aio.AioRpcError) -> DiscoveryError:
        if error.code() is grpc.StatusCode.INVALID_ARGUMENT:
            return InvalidDetails(error.details() or f"{self._where()} refused discoveryDetails")
        return HandlerUnavailable(f"{self._where()}: {error.code().name}: {error.details()}")

    def _where(self) -> str:
        return f"discovery handler {self.name!r} at {self.endpoint.address}"
