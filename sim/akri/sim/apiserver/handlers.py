"""aiohttp handlers: URLs and query parameters in, `Operations` calls, JSON (or Table) out.

Thin by design: path parsing, verb mapping, content negotiation, watch streaming and fault
decisions live here; every API rule lives in `operations`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web
from aiohttp.typedefs import Middleware

from akri.sim.apiserver import (
    admission_policies,
    discovery,
    dry_run,
    errors,
    openapi,
    patching,
    pod_access,
    protobuf,
    scale,
    tables,
    webhooks,
)
from akri.sim.apiserver.authn import User
from akri.sim.apiserver.authz import Attributes, Guard, Impersonation
from akri.sim.apiserver.faults import Faults, RequestInfo
from akri.sim.apiserver.operations import DeleteOptions, Operations, Selection, WatchFeed
from akri.sim.apiserver.resources import ResourceType
from akri.sim.apiserver.selectors import FieldSelector, LabelSelector
from akri.sim.apiserver.watchcache import Tick, WatchEvent

JSON = dict[str, Any]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
LogSource = Callable[[JSON, str, bool], str]
"""(pod, container, previous) -> the container's output so far; raises ApiError if it has none."""
log = logging.getLogger(__name__)

_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
DEFAULT_WATCH_TIMEOUT_S = 1800.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_CLOCK_SLACK_S = 1e-3
"""A timer may fire this much before its time (the loop's clock resolution): still due."""


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        text=json.dumps(body, separators=(",", ":")), status=status, content_type="application/json"
    )


def error_response(error: errors.ApiError) -> web.Response:
    response = _json(error.status, error.code)
    response.headers.update(error.headers)
    return response


@web.middleware
async def status_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure leaves the server as a `Status` body."""
    try:
        return await handler(request)
    except errors.ApiError as error:
        return error_response(error)
    except web.HTTPException:
        raise
    except ConnectionResetError:
        # The client went away (e.g. closed its watch): the normal end of a stream.
        log.debug("client left during %s %s", request.method, request.path)
        raise
    except Exception as error:
        log.exception("unhandled error serving %s %s", request.method, request.path)
        return error_response(errors.internal(str(error)))


def pause_gate(faults: Faults) -> Middleware:
    """Hold API requests while the server is paused; the admin API stays reachable."""

    @web.middleware
    async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/_sim"):
            await faults.wait_running()
        return await handler(request)

    return gate


async def read_body(request: web.Request, as_yaml: bool = False) -> Any:
    """A request body as JSON (or YAML, for apply), whether sent as JSON or protobuf."""
    raw = await request.read()
    if request.content_type == protobuf.PROTOBUF and raw:
        return protobuf.decode(raw)
    if not raw.strip():
        return None
    try:
        return yaml.safe_load(raw) if as_yaml else json.loads(raw)
    except (ValueError, yaml.YAMLError) as error:
        raise errors.bad_request(f"the request body is not valid JSON: {error}") from error


async def _object_body(request: web.Request, resource: ResourceType) -> Any:
    """A created or replaced object. A custom resource is decoded by its own `kind` and
    `apiVersion` (the unstructured decoder), so a body without them is refused (400); a
    built-in kind takes them from the URL."""
    body = await read_body(request)
    if resource.custom and isinstance(body, dict):
        if not body.get("kind"):
            raise errors.missing_kind(resource.kind, await request.read())
        if not body.get("apiVersion"):
            raise errors.other_api_version("", resource.api_version)
    return body


@dataclass(frozen=True)
class Target:
    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str


def _verb(method: str, target: Target, watch: bool) -> str:
    if method == "GET":
        return "get" if target.name else ("watch" if watch else "list")
    if method == "DELETE":
        return "delete" if target.name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


class ApiHandlers:
    """Discovery and resource endpoints of one server."""

    def __init__(
        self,
        operations: Operations,
        faults: Faults,
        guard: Guard,
        bookmark_interval_s: float = 60.0,
        log_source: LogSource | None = None,
    ) -> None:
        self._operations = operations
        self._faults = faults
        self._guard = guard
        self._bookmark_interval_s = bookmark_interval_s
        self._log_source = log_source

    def routes(self) -> list[web.AbstractRouteDef]:
        return [
            web.get("/version", self.version),
            web.get("/healthz", self.healthy),
            web.get("/readyz", self.healthy),
            web.get("/livez", self.healthy),
            web.get("/openapi/v3", self.openapi_root),
            web.get("/openapi/v3/api/{version}", self.openapi_group_version),
            web.get("/openapi/v3/apis/{group}/{version}", self.openapi_group_version),
            web.get("/api", self.core_versions),
            web.get("/api/v1", self.core_resources),
            web.get("/apis", self.groups),
            web.get("/apis/", self.groups),  # kubernetes clients ask with the slash
            web.get("/apis/{group}", self.group),
            web.get("/apis/{group}/{version}", self.group_resources),
            web.route("*", "/api/v1/{tail:.+}", self.resource),
            web.route("*", "/apis/{group}/{version}/{tail:.+}", self.resource),
        ]

    # ---- discovery -------------------------------------------------------------------------

    async def version(self, request: web.Request) -> web.Response:
        return _json(discovery.SERVER_VERSION)

    async def healthy(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def openapi_root(self, request: web.Request) -> web.Response:
        return _json(openapi.root(self._operations.registry))

    async def openapi_group_version(self, request: web.Request) -> web.Response:
        group, version = request.match_info.get("group", ""), request.match_info["version"]
        found = openapi.group_version(self._operations.registry, group, version)
        if found is None:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return _json(found)

    async def core_versions(self, request: web.Request) -> web.Response:
        return _json(discovery.api_versions(request.host))

    async def core_resources(self, request: web.Request) -> web.Response:
        return _json(discovery.api_resource_list(self._operations.registry, "", "v1"))

    async def groups(self, request: web.Request) -> web.Response:
        return _json(discovery.api_group_list(self._operations.registry))

    async def group(self, request: web.Request) -> web.Response:
        found = discovery.api_group(self._operations.registry, request.match_info["group"])
        if found is None:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return _json(found)

    async def group_resources(self, request: web.Request) -> web.Response:
        group, version = request.match_info["group"], request.match_info["version"]
        found = discovery.api_resource_list(self._operations.registry, group, version)
        if found is None:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return _json(found)

    # ---- resources -------------------------------------------------------------------------

    def _target(self, request: web.Request) -> Target:
        group = request.match_info.get("group", "")
        version = request.match_info.get("version", "v1")
        segments = request.match_info["tail"].strip("/").split("/")
        namespace: str | None = None
        if segments[0] == "namespaces" and len(segments) >= 3:
            inner = self._operations.registry.lookup(group, version, segments[2])
            if inner is not None and inner.namespaced:
                namespace, segments = segments[1], segments[2:]
        if len(segments) > 3:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        resource = self._operations.kind(group, version, segments[0])
        name = segments[1] if len(segments) > 1 else None
        subresource = segments[2] if len(segments) > 2 else ""
        allowed = resource.subresources | (
            {"finalize"} if resource.key == ("", "namespaces") else set()
        )
        object_without_namespace = resource.namespaced and namespace is None and name is not None
        cluster_kind_in_namespace = not resource.namespaced and namespace is not None
        if (
            object_without_namespace
            or cluster_kind_in_namespace
            or subresource not in {"", *allowed}
        ):
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return Target(resource, namespace, name, subresource)

    async def resource(self, request: web.Request) -> web.StreamResponse:
        target = self._target(request)
        query = request.query
        watch = query.get("watch", "") in _TRUE
        verb = _verb(request.method, target, watch)
        info = RequestInfo(
            verb=verb,
            resource=target.resource.plural,
            kind=target.resource.kind,
            group=target.resource.group,
            subresource=target.subresource,
            namespace=target.namespace or "",
            name=target.name or "",
        )
        attributes = Attributes(
            verb, info.group, info.resource, info.subresource, info.namespace, info.name
        )
        user = self._guard.admit(
            request.headers.get("Authorization"),
            request.secure,
            attributes,
            Impersonation.of(request.headers),
        )
        decision = self._faults.decide(info)
        await decision.wait()
        if decision.status is not None:
            injected = errors.by_code(decision.status, decision.message)
            if verb == "watch" and decision.status == 410:
                return await self._error_stream(request, injected)
            raise injected
        if verb == "watch":
            return await self._watch(request, target, info)
        return await self._dispatch(request, target, verb, user)

    async def _review(
        self,
        target: Target,
        operation: str,
        obj: Any,
        old: JSON | None,
        user: User,
        dry: bool,
    ) -> None:
        """The validating admission policies, then webhooks, that apply to this write."""
        write = webhooks.Write(
            operation, target.resource, target.subresource, target.namespace or "",
            target.name or (obj or {}).get("metadata", {}).get("name", ""), obj, old, user, dry,
        )  # fmt: skip
        admission_policies.admit(self._operations.store, write)
        await webhooks.admit(self._operations.store, write)

    async def _dispatch(
        self, request: web.Request, target: Target, verb: str, user: User
    ) -> web.StreamResponse:
        ops, resource, query = self._operations, target.resource, request.query
        namespace, name = target.namespace or "", target.name or ""
        strict = query.get("fieldValidation") == "Strict"
        # DeleteOptions come in the body (kubectl sends dryRun there) or the query.
        deletion = await read_body(request) if verb in ("delete", "deletecollection") else None
        dry = dry_run.requested([*query.getall("dryRun", []), *dry_run.in_body(deletion)], verb)
        if dry:
            ops = ops.dry_run()
        if target.subresource == "log":
            if verb != "get":  # a log is only read; a PUT must not replace the pod
                raise errors.method_not_allowed(
                    "the server does not allow this method on the requested resource"
                )
            return await self._log(request, ops.read(resource, namespace, name))
        if target.subresource == "scale":
            return _json(await self._scale(request, ops, target, verb))
        if verb == "get":
            return self._render(
                request, resource, [ops.read(resource, namespace, name)], single=True
            )
        if verb == "list":
            selection = self._selection(request, target)
            limit = int(query["limit"]) if query.get("limit", "").isdigit() else None
            items, token = ops.list_objects(resource, selection, limit, query.get("continue"))
            return self._render(request, resource, items, continue_token=token)
        if verb == "create" and target.subresource == "binding":
            ops.bind(namespace, name, await read_body(request))
            return _json(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "code": 201,
                },
                201,
            )
        if verb == "create" and target.subresource == "token":
            body = await read_body(request)
            return _json(self._guard.tokens.token_request(namespace, name, body), 201)
        if verb == "create" and not name and not (resource.namespaced and target.namespace is None):
            body = await _object_body(request, resource)
            await self._review(target, "CREATE", body, None, user, dry)
            return _json(ops.create(resource, target.namespace, body, strict), 201)
        if verb == "update" and name:
            body = await _object_body(request, resource)
            old = ops.read(resource, namespace, name)
            await self._review(target, "UPDATE", body, old, user, dry)
            return _json(ops.update(resource, namespace, name, body, target.subresource, strict))
        if verb == "patch" and name:
            content_type = request.content_type
            if content_type not in ops.patch_types(resource):
                raise errors.unsupported_media_type(content_type, ops.patch_types(resource))
            body = await read_body(request, content_type == patching.APPLY_PATCH)
            if content_type == patching.APPLY_PATCH:
                return await self._apply(ops, target, body, strict, user, dry)
            old = ops.read(resource, namespace, name)
            patched = ops.apply_patch(resource, old, content_type, body)
            await self._review(target, "UPDATE", patched, old, user, dry)
            return _json(
                ops.patch(resource, namespace, name, content_type, body, target.subresource, strict)
            )
        if verb == "delete":
            options = DeleteOptions.parse(deletion, query.get("propagationPolicy"))
            old = ops.read(resource, namespace, name)
            await self._review(target, "DELETE", None, old, user, dry)
            obj, gone = ops.delete(resource, namespace, name, options)
            if gone and not resource.returns_deleted_object:
                return _json(_success(resource, obj))
            return _json(obj)
        if verb == "deletecollection":
            options = DeleteOptions.parse(deletion, query.get("propagationPolicy"))
            for obj in ops.list_objects(resource, self._selection(request, target))[0]:
                meta = obj["metadata"]
                ops.delete(resource, meta.get("namespace", ""), meta["name"], options)
            return _json(
                {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
            )
        raise errors.method_not_allowed(
            "the server does not allow this method on the requested resource"
        )

    async def _log(self, request: web.Request, pod: JSON) -> web.StreamResponse:
        """A container's output, as the kubelet keeps it (`tailLines`, `limitBytes`,
        `previous`), and with `follow` what it writes next, until it stops running."""
        query = request.query
        container = pod_access.container_of(pod, query.get("container"))
        previous = query.get("previous", "") in _TRUE
        text = self._log_source(pod, container, previous) if self._log_source else ""
        shown = text
        if query.get("tailLines", "").isdigit():
            lines = shown.splitlines(keepends=True)
            shown = "".join(lines[len(lines) - min(len(lines), int(query["tailLines"])) :])
        if query.get("limitBytes", "").isdigit():
            shown = shown.encode()[: int(query["limitBytes"])].decode(errors="ignore")
        if previous or query.get("follow", "") not in _TRUE or self._log_source is None:
            return web.Response(text=shown, content_type="text/plain")
        source, store = self._log_source, self._operations.store
        meta = pod["metadata"]

        def current() -> tuple[str, bool] | None:
            now = store.peek(("", "pods"), meta["namespace"], meta["name"])
            if now is None or now["metadata"]["uid"] != meta["uid"]:
                return None
            return source(now, container, False), pod_access.running(now, container)

        return await pod_access.follow(request, shown, len(text), current)

    async def _scale(
        self, request: web.Request, ops: Operations, target: Target, verb: str
    ) -> JSON:
        resource = target.resource
        namespace, name = target.namespace or "", target.name or ""
        current = ops.get(resource, namespace, name)
        if verb == "get":
            return scale.of(current)
        if verb == "update":
            wanted = await read_body(request)
        elif verb == "patch":
            wanted = scale.patched(current, request.content_type, await read_body(request))
        else:
            raise errors.method_not_allowed(
                "the server does not allow this method on the requested resource"
            )
        return scale.of(
            ops.update(resource, namespace, name, scale.applied(resource, current, wanted))
        )

    async def _apply(
        self, ops: Operations, target: Target, body: Any, strict: bool, user: User, dry: bool
    ) -> web.Response:
        """Server-side apply, approximated: create when absent, else a (strategic) merge."""
        resource = target.resource
        namespace, name = target.namespace or "", target.name or ""
        try:
            old = ops.read(resource, namespace, name)
        except errors.ApiError as error:
            if error.code != 404:
                raise
            await self._review(target, "CREATE", body, None, user, dry)
            return _json(ops.create(resource, target.namespace, body, strict), 201)
        patched = ops.apply_patch(resource, old, patching.APPLY_PATCH, body)
        await self._review(target, "UPDATE", patched, old, user, dry)
        return _json(
            ops.patch(
                resource, namespace, name, patching.APPLY_PATCH, body, target.subresource, strict
            )
        )

    @staticmethod
    def _selection(request: web.Request, target: Target) -> Selection:
        return Selection(
            namespace=target.namespace,
            labels=LabelSelector.parse(request.query.get("labelSelector")),
            fields=FieldSelector.parse(request.query.get("fieldSelector")),
        )

    def _render(
        self,
        request: web.Request,
        resource: ResourceType,
        items: list[JSON],
        single: bool = False,
        continue_token: str | None = None,
    ) -> web.Response:
        list_meta: JSON = {"resourceVersion": str(self._operations.store.revision)}
        if continue_token:
            list_meta["continue"] = continue_token
        if tables.wants_table(request.headers.get("Accept", "")):
            include = request.query.get("includeObject", "Metadata")
            return _json(tables.table(resource, items, include, list_meta))
        if single:
            return _json(items[0])
        return _json(
            {
                "kind": f"{resource.kind}List",
                "apiVersion": resource.api_version,
                "metadata": list_meta,
                "items": items if resource.custom else [_bare(item) for item in items],
            }
        )

    # ---- watch -----------------------------------------------------------------------------

    async def _open_stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        return response

    async def _error_stream(
        self, request: web.Request, error: errors.ApiError
    ) -> web.StreamResponse:
        """A watch that fails after it started (too old resourceVersion) reports an ERROR event."""
        response = await self._open_stream(request)
        await response.write(_line({"type": "ERROR", "object": error.status}))
        await response.write_eof()
        return response

    async def _watch(
        self, request: web.Request, target: Target, info: RequestInfo
    ) -> web.StreamResponse:
        query = request.query
        since = query.get("resourceVersion")
        try:
            feed = self._operations.watch(target.resource, self._selection(request, target), since)
        except errors.ApiError as error:
            if error.code != 410:
                raise
            return await self._error_stream(request, error)
        timeout = (
            float(query["timeoutSeconds"])
            if query.get("timeoutSeconds", "").isdigit()
            else DEFAULT_WATCH_TIMEOUT_S
        )
        stream = _WatchStream(
            feed,
            target.resource,
            tables.wants_table(request.headers.get("Accept", "")),
            query.get("includeObject", "Metadata"),
            bookmarks=query.get("allowWatchBookmarks", "") in _TRUE,
            initial_events_end=query.get("sendInitialEvents", "") in _TRUE,
        )
        self._faults.track_watch(feed, info)
        response = await self._open_stream(request)
        try:
            await stream.run(
                response, timeout, self._bookmark_interval_s, self._operations, self._faults
            )
        except ConnectionResetError:  # the client hung up: the watch simply ends
            return response
        finally:
            feed.close()
            self._faults.untrack_watch(feed)
        if feed.dropped and request.transport is not None:
            request.transport.abort()  # an injected connection drop: no clean end of stream
            return response
        await response.write_eof()
        return response


class _WatchStream:
    """Writes one watch's events as newline-delimited JSON until timeout, end or drop."""

    def __init__(
        self,
        feed: WatchFeed,
        resource: ResourceType,
        as_table: bool,
        include_object: str,
        bookmarks: bool,
        initial_events_end: bool,
    ) -> None:
        self._feed = feed
        self._resource = resource
        self._as_table = as_table
        self._include_object = include_object
        self._bookmarks = bookmarks
        self._initial_events_end = initial_events_end and bookmarks
        self._columns_sent = False

    async def run(
        self,
        response: web.StreamResponse,
        timeout_s: float,
        bookmark_interval_s: float,
        operations: Operations,
        faults: Faults,
    ) -> None:
        """One timer per stream, not per event: it wakes the feed when a bookmark (every
        `bookmark_interval_s`, when asked for) or the end of the watch is due."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        interval = bookmark_interval_s if self._bookmarks else timeout_s
        timer = loop.call_at(min(deadline, loop.time() + interval), self._feed.tick)
        try:
            while True:
                if self._initial_events_end and self._feed.backlog_empty:
                    self._initial_events_end = False
                    await response.write(self._bookmark(operations, {INITIAL_EVENTS_END: "true"}))
                event = await self._feed.next()
                if event is None:
                    return
                if isinstance(event, Tick):
                    now = loop.time()
                    if now >= deadline - _CLOCK_SLACK_S:
                        return
                    if self._bookmarks:
                        await response.write(self._bookmark(operations))
                    timer = loop.call_at(min(deadline, now + interval), self._feed.tick)
                    continue
                await faults.wait_running()
                await response.write(self._event(*event))
        finally:
            timer.cancel()

    def _event(self, kind: str, obj: JSON, source: WatchEvent) -> bytes:
        if not self._as_table:
            key = (kind, self._resource.api_version)
            line = source.lines.get(key)
            if line is None:
                line = source.lines[key] = _line({"type": kind, "object": obj})
            return line
        table = tables.table(
            self._resource,
            [obj],
            self._include_object,
            {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            with_columns=not self._columns_sent,
        )
        self._columns_sent = True
        return _line({"type": kind, "object": table})

    def _bookmark(self, operations: Operations, annotations: dict[str, str] | None = None) -> bytes:
        metadata: JSON = {"resourceVersion": str(operations.store.revision)}
        if annotations:
            metadata["annotations"] = annotations
        obj = {
            "kind": self._resource.kind,
            "apiVersion": self._resource.api_version,
            "metadata": metadata,
        }
        return _line({"type": "BOOKMARK", "object": obj})


def _line(event: JSON) -> bytes:
    return (json.dumps(event, separators=(",", ":")) + "\n").encode()


def _bare(item: JSON) -> JSON:
    """Built-in list items carry no kind/apiVersion on the wire."""
    return {k: v for k, v in item.items() if k not in ("kind", "apiVersion")}


def _success(resource: ResourceType, obj: JSON) -> JSON:
    details: JSON = {
        "name": obj["metadata"]["name"],
        "kind": resource.plural,
        "uid": obj["metadata"].get("uid"),
    }
    if resource.group:
        details["group"] = resource.group
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
