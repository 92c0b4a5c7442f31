"""Reaching pods through the API server: the pod and Service proxy, `exec` and `port-forward`.

The proxy forwards HTTP to the pod's IP (a Service's: to a ready pod behind it, as kube-proxy
would), as kube-apiserver forwards `.../pods/<name>[:port]/proxy/<path>`. `exec` speaks the
WebSocket channel protocol kubectl >= 1.30 uses (`v5.channel.k8s.io`, `v4.channel.k8s.io`);
`port-forward` the SPDY-over-WebSocket tunnel kubectl >= 1.31 uses (`portforward`). Commands
run in the container's namespaces through the node's runtime (`exec_source`): only pods of the
process runtime have processes. What the sim does not serve (SPDY without WebSocket, attach,
the node proxy) is refused with a message that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import aiohttp
from aiohttp import web

from akri.sim.apiserver import errors, spdy
from akri.sim.apiserver.authz import Attributes, Guard, Impersonation
from akri.sim.apiserver.endpoints import endpoint
from akri.sim.apiserver.store import Store

JSON = dict[str, Any]
Exec = Callable[[JSON, str, Sequence[str], bool], Awaitable[asyncio.subprocess.Process]]
"""(pod, container, command, with stdin) -> the command running in the container; raises
ApiError when the container runs no process."""
log = logging.getLogger(__name__)

CHANNEL_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
     "transfer-encoding", "upgrade", "authorization", "host", "content-length"}
)  # fmt: skip
_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch"}
_PROXY_TIMEOUT = aiohttp.ClientTimeout(total=60)
LOG_POLL_S = 0.25
"""How often a followed log is read again (a kubelet follows its log files alike)."""
_TRUE = frozenset({"1", "true", "True"})


def unsupported(what: str) -> errors.ApiError:
    return errors.method_not_allowed(f"not supported by akri sim: {what}")


def _split(name: str) -> tuple[str, str, str]:
    """`[scheme:]name[:port]` as the proxy subresource names its target."""
    parts = name.split(":")
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    if len(parts) == 2:
        return "http", parts[0], parts[1]
    return "http", name, ""


def _service_port(service: JSON, port: str) -> int:
    """A Service port by name or number; the only one when none is named."""
    ports = (service.get("spec") or {}).get("ports") or []
    for entry in ports:
        if port in (str(entry.get("name", "")), str(entry.get("port"))) or (
            not port and len(ports) == 1
        ):
            return int(entry["port"])
    name = service["metadata"]["name"]
    raise errors.ApiError(
        503, "ServiceUnavailable", f'no service port "{port}" found for service "{name}"'
    )


class PodAccess:
    """The pod-reaching endpoints of one server."""

    def __init__(self, store: Store, guard: Guard, exec_source: Exec | None = None) -> None:
        self._store = store
        self._guard = guard
        self._exec_source = exec_source

    def routes(self) -> list[web.AbstractRouteDef]:
        pod = "/api/v1/namespaces/{namespace}/pods/{name}"
        service = "/api/v1/namespaces/{namespace}/services/{name}"
        return [
            web.route("*", f"{pod}/proxy", self.pod_proxy),
            web.route("*", f"{pod}/proxy/{{path:.*}}", self.pod_proxy),
            web.route("*", f"{service}/proxy", self.service_proxy),
            web.route("*", f"{service}/proxy/{{path:.*}}", self.service_proxy),
            web.route("*", f"{pod}/exec", self.exec),
            web.route("*", f"{pod}/portforward", self.port_forward),
            web.route("*", f"{pod}/attach", self.refuse),
            web.route("*", "/api/v1/nodes/{name}/proxy", self.refuse),
            web.route("*", "/api/v1/nodes/{name}/proxy/{path:.*}", self.refuse),
        ]

    def _admit(self, request: web.Request, resource: str, subresource: str, name: str) -> None:
        verb = _VERBS.get(request.method, request.method.lower())
        self._guard.admit(
            request.headers.get("Authorization"),
            request.secure,
            Attributes(verb, "", resource, subresource, request.match_info.get("namespace", ""),
                       name),
            Impersonation.of(request.headers),
        )  # fmt: skip

    def _object(self, plural: str, namespace: str, name: str) -> JSON:
        found = self._store.peek(("", plural), namespace, name)
        if found is None:
            raise errors.not_found("", plural, name)
        return found

    async def refuse(self, request: web.Request) -> web.StreamResponse:
        what = request.path.rstrip("/").split("/")[-1]
        if "/nodes/" in request.path:
            raise unsupported("the node proxy (the simulated kubelets serve no HTTP API)")
        raise unsupported(f"pods/{what} (use kubectl exec or kubectl logs)")

    # ---- proxy ---------------------------------------------------------------------------

    async def pod_proxy(self, request: web.Request) -> web.StreamResponse:
        scheme, name, port = _split(request.match_info["name"])
        self._admit(request, "pods", "proxy", name)
        pod = self._object("pods", request.match_info["namespace"], name)
        address = (pod.get("status") or {}).get("podIP")
        if not address:
            raise errors.bad_request(f'address not allowed: pod "{name}" has no IP yet')
        default = "443" if scheme == "https" else "80"
        return await self._forward(request, scheme, str(address), int(port or default))

    async def service_proxy(self, request: web.Request) -> web.StreamResponse:
        scheme, name, port = _split(request.match_info["name"])
        self._admit(request, "services", "proxy", name)
        namespace = request.match_info["namespace"]
        service = self._object("services", namespace, name)
        try:
            host, target = endpoint(
                service, self._store.objects(("", "pods"), namespace), _service_port(service, port)
            )
        except LookupError as error:
            raise errors.ApiError(503, "ServiceUnavailable", str(error)) from error
        return await self._forward(request, scheme, host, target)

    async def _forward(
        self, request: web.Request, scheme: str, host: str, port: int
    ) -> web.StreamResponse:
        path = request.match_info.get("path", "")
        url = f"{scheme}://{host}:{port}/{path}"
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers = {k: v for k, v in headers.items() if not k.lower().startswith("impersonate-")}
        try:
            async with (
                aiohttp.ClientSession(timeout=_PROXY_TIMEOUT) as session,
                session.request(
                    request.method, url, params=request.query, headers=headers,
                    data=await request.read(), ssl=False, allow_redirects=False,
                ) as answer,
            ):  # fmt: skip
                body = await answer.read()
                kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
                kept.pop("Content-Encoding", None)  # aiohttp has decoded the body
                return web.Response(status=answer.status, body=body, headers=kept)
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            raise errors.ApiError(
                503, "ServiceUnavailable", f"error trying to reach service: {error}"
            ) from error

    # ---- exec ----------------------------------------------------------------------------

    async def exec(self, request: web.Request) -> web.StreamResponse:
        name, query = request.match_info["name"], request.query
        self._admit(request, "pods", "exec", name)
        pod = self._object("pods", request.match_info["namespace"], name)
        container = container_of(pod, query.get("container"))
        command = query.getall("command", [])
        if not command:
            raise errors.bad_request("you must specify at least 1 command")
        if not _upgrades_to_websocket(request):
            raise unsupported("exec over SPDY; kubectl 1.30 or later speaks WebSocket")
        if query.get("tty", "") in _TRUE:
            raise unsupported("exec with a terminal (-t); run the command without -t")
        if self._exec_source is None:
            raise unsupported("exec without the process runtime (pods run no processes)")
        wants_stdin = query.get("stdin", "") in _TRUE
        process = await self._exec_source(pod, container, command, wants_stdin)
        socket = web.WebSocketResponse(protocols=CHANNEL_PROTOCOLS)
        await socket.prepare(request)
        try:
            await _stream_exec(socket, process)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        return socket

    # ---- port-forward --------------------------------------------------------------------

    async def port_forward(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        self._admit(request, "pods", "portforward", name)
        pod = self._object("pods", request.match_info["namespace"], name)
        address = (pod.get("status") or {}).get("podIP")
        if not _upgrades_to_websocket(request):
            raise unsupported("port-forward over SPDY; kubectl 1.31 or later tunnels WebSocket")
        if not address:
            raise errors.bad_request(f'pod "{name}" has no IP yet')
        socket = web.WebSocketResponse(protocols=(spdy.TUNNEL_PROTOCOL,))
        await socket.prepare(request)
        if socket.ws_protocol != spdy.TUNNEL_PROTOCOL:
            await socket.close(message=b"unsupported protocol")
            return socket
        await spdy.PortForward(socket, str(address)).run()
        return socket


def _upgrades_to_websocket(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


def container_of(pod: JSON, container: str | None) -> str:
    """The container a request names, or the pod's only one; 400 as kube-apiserver answers."""
    name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    names = [c["name"] for c in [*(spec.get("initContainers") or []), *spec["containers"]]]
    only = spec["containers"][0]["name"] if len(spec["containers"]) == 1 else ""
    chosen = container or only
    if not chosen:
        raise errors.bad_request(
            f"a container name must be specified for pod {name}, "
            f"choose one of: [{' '.join(c['name'] for c in spec['containers'])}]"
        )
    if chosen not in names:
        raise errors.bad_request(f"container {chosen} is not valid for pod {name}")
    return chosen


async def _stream_exec(socket: web.WebSocketResponse, process: asyncio.subprocess.Process) -> None:
    """Pump the process's output to the channels and the socket's stdin to it; report the exit
    status on the error channel, as the kubelet does."""

    async def pump(stream: asyncio.StreamReader | None, channel: int) -> None:
        while stream is not None and (chunk := await stream.read(32768)):
            await socket.send_bytes(bytes([channel]) + chunk)

    async def feed() -> None:
        async for message in socket:
            if message.type != aiohttp.WSMsgType.BINARY or not message.data:
                continue
            channel, data = message.data[0], message.data[1:]
            if process.stdin is None:
                continue
            if channel == STDIN:
                process.stdin.write(data)
                with contextlib.suppress(ConnectionError):
                    await process.stdin.drain()
            elif channel == CLOSE and data[:1] == bytes([STDIN]):
                process.stdin.close()
        if process.stdin is not None:  # the client left: so does the command's input
            process.stdin.close()

    reader = asyncio.create_task(feed())
    try:
        await asyncio.gather(pump(process.stdout, STDOUT), pump(process.stderr, STDERR))
        code = await process.wait()
        await socket.send_bytes(bytes([ERROR]) + json.dumps(exit_status(code)).encode())
        await socket.close()
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


def exit_status(code: int) -> JSON:
    """The Status the kubelet reports on the error channel when a command ends."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def running(pod: JSON, container: str) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return any(s.get("name") == container and "running" in (s.get("state") or {}) for s in statuses)


async def follow(
    request: web.Request, shown: str, offset: int, current: Callable[[], tuple[str, bool] | None]
) -> web.StreamResponse:
    """`kubectl logs -f`: `shown`, then what the log gains after `offset` characters, until
    the container stops running (`current` answers (log, running), None once the pod is gone)
    or starts a new run (its log shrinks)."""
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(request)
    await response.write(shown.encode())
    while (now := current()) is not None and len(now[0]) >= offset:
        text, alive = now
        if len(text) > offset:
            await response.write(text[offset:].encode())
            offset = len(text)
        if not alive:
            break
        await asyncio.sleep(LOG_POLL_S)
    await response.write_eof()
    return response
