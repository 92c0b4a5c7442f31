"""List then watch one kind of object and keep a local copy, as a client-go informer does.

The agent, the controller and the simulator all follow the API this way: a watch resumes
from the last resourceVersion it saw after a dropped connection or a server-side timeout,
and a `410 Gone` (history too old) triggers a relist whose differences against the local
copy are delivered as ordinary events, so a handler never misses a deletion: also of an
object the program wrote itself and `assume`d before its watch showed it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import aiohttp
from kubernetes_asyncio import watch
from kubernetes_asyncio.client.exceptions import ApiException

from akri.backoff import Backoff
from akri.kube.calls import call, describe

log = logging.getLogger(__name__)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Object = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)
Handler = Callable[[EventType, Object], Awaitable[None]]
ListFunction = Callable[..., Awaitable[Any]]  # a kubernetes-asyncio list_* method, args bound

HTTP_GONE = 410


def object_key(obj: Object) -> Key:
    metadata = obj["metadata"]
    return metadata.get("namespace", ""), metadata["name"]


def _identity(obj: Object) -> Object:
    metadata = obj["metadata"]
    return {
        "metadata": {
            k: metadata[k] for k in ("name", "namespace", "resourceVersion") if k in metadata
        }
    }


class RawWatch(watch.Watch):
    """A watch whose events carry each object as the API sent it (`raw_object`), parsed once.

    Asked for a return type, kubernetes-asyncio serialises every object again and parses it a
    second time to build that type; the reflector only reads the raw object, and that double
    work was a tenth of an agent's CPU on every Instance change. Nor is the ApiClient built
    that a Watch keeps for that second parse alone: an SSL context loaded with the system's CA
    certificates and an HTTP session, some 25 ms of CPU on every watch opened.
    """

    def __init__(self) -> None:  # not Watch's: it builds that ApiClient
        self._raw_return_type = "object"
        self._stop = False
        self.resource_version = None
        self.resp = None

    async def close(self) -> None:
        """Watch's close, without closing an ApiClient."""
        if self.resp is not None:
            self.resp.release()
            self.resp = None

    def unmarshal_event(self, data: str | bytes, response_type: str | None) -> Any:
        return super().unmarshal_event(data, None)


class Reflector:
    """Keeps `objects` equal to the server's view and calls `handler` for every change.

    `list_function` is a kubernetes-asyncio list method with its positional arguments bound
    (e.g. `functools.partial(custom.list_cluster_custom_object, "akri.sh", "v0", "instances")`);
    selectors go in `list_options`. Handlers run one at a time, in the order of the events.
    With `slim`, `objects` keeps only each object's name, namespace and resourceVersion (what
    a relist compares), for handlers that keep their own parsed copy anyway.
    """

    def __init__(
        self,
        list_function: ListFunction,
        handler: Handler | None = None,
        *,
        watch_timeout_s: int = 300,
        backoff: Backoff | None = None,
        slim: bool = False,
        **list_options: str,
    ) -> None:
        self.objects: dict[Key, Object] = {}
        self.slim = slim
        self.synced = asyncio.Event()
        self._list = list_function
        self._handler = handler
        self._watch_timeout_s = watch_timeout_s
        self._backoff = backoff or Backoff()
        self._options = list_options
        self._resource_version: str | None = None  # None: relist before watching
        self._assumed: dict[Key, Object] = {}
        """Objects the program wrote that list and watch have not shown yet."""
        self._assumed_while_listing: set[Key] | None = None

    async def run(self) -> None:
        """Follow the API until cancelled; errors are logged and retried with backoff."""
        while True:
            try:
                if self._resource_version is None:
                    self._resource_version = await self._relist()
                    self._backoff.reset()
                await self._watch()
                self._backoff.reset()
            except ApiException as error:
                if error.status == HTTP_GONE:
                    log.info("watch history expired, relisting: %s", error.reason)
                    self._resource_version = None
                    continue
                await self._pause(describe(error))
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as error:
                await self._pause(describe(error))

    async def _pause(self, reason: str) -> None:
        delay = self._backoff.next_delay()
        log.warning("list/watch failed (%s); retrying in %.1fs", reason, delay)
        await asyncio.sleep(delay)

    def assume(self, obj: Object) -> None:
        """The program wrote `obj` (as the API answered) and keeps it before the watch shows it.

        A relist that does not find it reports it deleted, like any object it had shown: the
        object may be deleted by another writer while the watch is broken, and a relist after
        410 Gone never shows events of what it no longer finds. One written while a list is
        in flight may be newer than that list: the watch resuming after it shows it.
        """
        key = object_key(obj)
        if key in self.objects:
            return
        self._assumed[key] = _identity(obj) if self.slim else obj
        if self._assumed_while_listing is not None:
            self._assumed_while_listing.add(key)

    async def _relist(self) -> str:
        self._assumed_while_listing = set()
        try:
            body = await call(self._list, **self._options)
            newer = self._assumed_while_listing
        finally:
            self._assumed_while_listing = None
        fresh = {object_key(obj): obj for obj in body.get("items", [])}
        held = self._assumed | self.objects
        for key in held.keys() - fresh.keys() - newer:
            await self._apply("DELETED", held[key])
        for key, obj in fresh.items():
            known = self.objects.get(key)
            if known is None:
                await self._apply("ADDED", obj)
            elif known["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                await self._apply("MODIFIED", obj)
        self.synced.set()
        resource_version: str = body["metadata"]["resourceVersion"]
        return resource_version

    async def _watch(self) -> None:
        """Stream events until the server ends the watch, remembering where to resume."""
        async with RawWatch() as stream:
            async for event in stream.stream(
                self._list,
                resource_version=self._resource_version,
                timeout_seconds=self._watch_timeout_s,
                allow_watch_bookmarks=True,
                **self._options,
            ):
                kind = event["type"]
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    await self._apply(kind, event["raw_object"])
                # Resume after the last event handled, also when the connection drops.
                self._resource_version = event["raw_object"]["metadata"]["resourceVersion"]
                self._backoff.reset()

    async def _apply(self, kind: EventType, obj: Object) -> None:
        key = object_key(obj)
        self._assumed.pop(key, None)
        if kind == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = _identity(obj) if self.slim else obj
        if self._handler is None:
            return
        try:
            await self._handler(kind, obj)
        except Exception:  # one bad object or handler bug must not stop the watch for all
            log.exception("handler failed on %s %s/%s", kind, *key)
