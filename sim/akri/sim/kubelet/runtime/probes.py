"""Liveness and readiness probes as the kubelet runs them: httpGet, tcpSocket and exec.

A probe starts after `initialDelaySeconds`, runs every `periodSeconds` with `timeoutSeconds`,
and flips its result after `failureThreshold` failures or `successThreshold` successes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
Connect = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
Exec = Callable[[Sequence[str]], Awaitable[int]]
"""Runs a command in the container; returns its exit code."""


def port_number(port: Any, container: Object) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    raise ValueError(f"port {port!r} is not a port of container {container.get('name')}")


async def _http_get(action: Object, host: str, port: int, connect: Connect) -> bool:
    if str(action.get("scheme", "HTTP")).upper() == "HTTPS":
        return await _tcp(host, port, connect)  # the kubelet skips verification: reachable is up
    reader, writer = await connect(host, port)
    try:
        headers = "".join(f"{h['name']}: {h['value']}\r\n" for h in action.get("httpHeaders") or [])
        request = (
            f"GET {action.get('path', '/')} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"User-Agent: kube-probe/1.36\r\nConnection: close\r\n{headers}\r\n"
        )
        writer.write(request.encode())
        await writer.drain()
        status_line = (await reader.readline()).decode(errors="replace").split()
        return (
            len(status_line) >= 2 and status_line[1].isdigit() and 200 <= int(status_line[1]) < 400
        )
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def _tcp(host: str, port: int, connect: Connect) -> bool:
    _, writer = await connect(host, port)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def check(probe: Object, container: Object, host: str, connect: Connect, run: Exec) -> bool:
    """One probe attempt: True when it succeeds within its timeout."""
    timeout = float(probe.get("timeoutSeconds", 1))
    try:
        async with asyncio.timeout(timeout):
            if "httpGet" in probe:
                action = probe["httpGet"]
                port = port_number(action.get("port"), container)
                return await _http_get(action, action.get("host") or host, port, connect)
            if "tcpSocket" in probe:
                action = probe["tcpSocket"]
                port = port_number(action.get("port"), container)
                return await _tcp(action.get("host") or host, port, connect)
            if "exec" in probe:
                return await run(probe["exec"].get("command") or []) == 0
    except (OSError, TimeoutError, ValueError) as error:
        log.debug("probe of %s failed: %r", container.get("name"), error)
        return False
    return True  # a probe without a handler is refused by the API; treat as passing


async def follow(
    probe: Object,
    container: Object,
    host: str,
    connect: Connect,
    run: Exec,
    changed: Callable[[bool], None],
) -> None:
    """Probe until cancelled; `changed(result)` on the first result and on every flip."""
    await asyncio.sleep(float(probe.get("initialDelaySeconds", 0)))
    period = float(probe.get("periodSeconds", 10))
    to_fail = int(probe.get("failureThreshold", 3))
    to_succeed = int(probe.get("successThreshold", 1))
    result: bool | None = None
    successes = failures = 0
    while True:
        ok = await check(probe, container, host, connect, run)
        successes, failures = (successes + 1, 0) if ok else (0, failures + 1)
        if ok and result is not True and successes >= to_succeed:
            result = True
            changed(True)
        elif not ok and result is not False and failures >= to_fail:
            result = False
            changed(False)
        await asyncio.sleep(period)
