"""The emulator's own admin API under /_sim/faults (see the package docstring for the routes)."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from aiohttp import web

from akri.sim.apiserver.authz import AccessLog
from akri.sim.apiserver.faults import FaultRule, Faults

_RULE_FIELDS = {f.name for f in fields(FaultRule)} - {"id", "hits"}


class AdminHandlers:
    """HTTP access to a server's `Faults`, for tests in other processes and for people."""

    def __init__(self, faults: Faults, access: AccessLog) -> None:
        self._faults = faults
        self._access = access

    def routes(self) -> list[web.AbstractRouteDef]:
        return [
            web.get("/_sim/faults", self.describe),
            web.post("/_sim/faults", self.add),
            web.delete("/_sim/faults", self.clear),
            web.delete("/_sim/faults/{id:\\d+}", self.remove),
            web.post("/_sim/faults/pause", self.pause),
            web.post("/_sim/faults/resume", self.resume),
            web.post("/_sim/faults/drop-watches", self.drop_watches),
            web.get("/_sim/access", self.accesses),
            web.delete("/_sim/access", self.forget_accesses),
        ]

    @staticmethod
    async def _body(request: web.Request) -> dict[str, Any]:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError as error:
            raise web.HTTPBadRequest(text=f"invalid JSON: {error}") from error
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(text="expected a JSON object")
        return body

    async def describe(self, request: web.Request) -> web.Response:
        return web.json_response(self._faults.describe())

    async def add(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        unknown = set(body) - _RULE_FIELDS
        if unknown:
            raise web.HTTPBadRequest(text=f"unknown fields: {sorted(unknown)}")
        try:
            rule = self._faults.add(**body)
        except (TypeError, ValueError) as error:
            raise web.HTTPBadRequest(text=str(error)) from error
        return web.json_response(asdict(rule), status=201)

    async def clear(self, request: web.Request) -> web.Response:
        self._faults.clear()
        return web.json_response(self._faults.describe())

    async def remove(self, request: web.Request) -> web.Response:
        if not self._faults.remove(int(request.match_info["id"])):
            raise web.HTTPNotFound(text="no such rule")
        return web.json_response(self._faults.describe())

    async def pause(self, request: web.Request) -> web.Response:
        self._faults.pause()
        return web.json_response(self._faults.describe())

    async def resume(self, request: web.Request) -> web.Response:
        self._faults.resume()
        return web.json_response(self._faults.describe())

    async def drop_watches(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        dropped = self._faults.drop_watches(body.get("resource"), body.get("namespace"))
        return web.json_response({"dropped": dropped})

    async def accesses(self, request: web.Request) -> web.Response:
        """The distinct calls each user made (`?user=system:serviceaccount:ns:name`)."""
        return web.json_response(self._access.entries(request.query.get("user")))

    async def forget_accesses(self, request: web.Request) -> web.Response:
        self._access.clear()
        return web.json_response([])
