"""One device plugin across kubelet restarts: serve, register, and register again when needed.

The kubelet never re-opens ListAndWatch by itself; recovery always takes a new Register. Three
signs call for one: kubelet.sock was re-created, this plugin's socket was deleted (a new
incarnation on a fresh socket follows), or the kubelet cut the ListAndWatch stream. A stream
cut counts only for the stream of the current registration: registering again makes the
kubelet close the previous stream, and reacting to that would loop forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Callable, Collection, Coroutine
from pathlib import Path
from typing import Any

import grpc

from akri.agent.plugins.desired import PluginSpec
from akri.agent.plugins.kubelet_watch import Identity, socket_identity
from akri.agent.plugins.registration import KubeletRegistration
from akri.agent.plugins.server import PluginServer, generic_handlers
from akri.agent.plugins.servicer import PluginServicer, StreamListener
from akri.backoff import Backoff
from akri.logs import OnceLog
from akri.tasks import finish

log = logging.getLogger(__name__)

REGISTER_TIMEOUT_S = 10.0
"""The kubelet dials back within Register (up to 10 s itself) before answering."""
CONCURRENT_REGISTRATIONS = 16
"""Plugins of one node starting and registering at once (`turns`). A thousand at once (agent
start, kubelet restart) is no faster, and leaves the memory of a thousand connections behind."""


def register_backoff() -> Backoff:
    return Backoff(initial=0.1, maximum=5.0)


class Outcome(enum.Enum):
    """How an attempt to serve and register ended."""

    REGISTERED = enum.auto()
    FAILED = enum.auto()
    """Tried again after the backoff's next delay, or at once when a sign came meanwhile."""
    NO_KUBELET = enum.auto()
    """No kubelet serves: tried again once the kubelet watch sees one, not on a timer (a
    thousand plugins polling while a kubelet restarts took three turns each for nothing)."""


class Plugin:
    """One plugin's life across kubelet restarts (the module docstring); a node keeps one per
    Instance, so without an attribute dictionary."""

    __slots__ = (
        "_backoff",
        "_churned",
        "_directory",
        "_epoch",
        "_handlers",
        "_problem",
        "_problem_changed",
        "_register_timeout",
        "_registered_before",
        "_registered_on",
        "_registering",
        "_registration",
        "_retiring",
        "_servicer",
        "_turns",
        "_wake",
        "_warn_once",
        "registered",
        "server",
        "spec",
    )

    def __init__(
        self,
        make_servicer: Callable[[StreamListener], PluginServicer],
        directory: Path,
        registration: KubeletRegistration,
        *,
        backoff: Callable[[], Backoff] = register_backoff,
        register_timeout: float = REGISTER_TIMEOUT_S,
        turns: asyncio.Semaphore | None = None,
        churned: Callable[[], None] = lambda: None,
        problem_changed: Callable[[], None] = lambda: None,
    ) -> None:
        """`make_servicer` is given what to tell when the kubelet opens ListAndWatch;
        `churned` is called after each registration and each stopped incarnation;
        `problem_changed` whenever `problem` changes."""
        servicer = make_servicer(self._stream_opened)
        self.spec: PluginSpec = servicer.spec
        self.registered = False
        """Whether the kubelet accepted the current incarnation and no sign has called for more."""
        self._problem: str | None = None
        self._problem_changed = problem_changed
        self._warn_once = OnceLog(log)
        self.server: PluginServer | None = None
        self._servicer = servicer
        self._handlers = generic_handlers(servicer)  # the same for every incarnation
        self._directory = directory
        self._registration = registration
        self._backoff = backoff
        self._register_timeout = register_timeout
        self._turns = turns or asyncio.Semaphore(1)
        self._churned = churned
        self._wake = asyncio.Event()
        self._epoch = 0  # bumped by every Register and every new or stopped server
        self._registering: asyncio.Future[None] | None = None
        self._registered_on: Identity | None = None
        self._registered_before = False
        self._retiring: set[asyncio.Task[None]] = set()

    @property
    def problem(self) -> str | None:
        """Why the last attempt to serve or register failed; None once registered."""
        return self._problem

    def _set_problem(self, problem: str | None) -> None:
        if problem != self._problem:
            self._problem = problem
            self._problem_changed()

    def check(self, kubelet: Identity | None, names: Collection[str]) -> None:
        """The kubelet watch's tick: wake up when the kubelet is new or our socket is no
        longer among the directory's `names`."""
        if kubelet is None:
            return  # no kubelet: wait until one serves (its identity will differ)
        server = self.server
        if kubelet != self._registered_on or (server is not None and server.name not in names):
            self._wake_up()

    def _wake_up(self) -> None:
        """A sign calls for a fresh attempt: one in flight is given up."""
        self._wake.set()
        if self._registering is not None:
            self._registering.cancel()

    async def run(self) -> None:
        """Keep the plugin registered until cancelled; then stop serving."""
        backoff = self._backoff()
        try:
            while True:
                self._wake.clear()
                self.registered = False
                outcome = await self._attempt()
                if outcome is Outcome.REGISTERED:
                    self._churned()
                    self.registered = True
                    self._set_problem(None)
                    backoff.reset()
                    await self._wake.wait()
                    continue
                # Without a kubelet, looking again after the longest delay only covers a
                # kubelet socket the watch could not tell from the last one it saw.
                no_kubelet = outcome is Outcome.NO_KUBELET
                delay = backoff.maximum if no_kubelet else backoff.next_delay()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
        finally:
            self.registered = False
            self._epoch += 1
            if self.server is not None:
                self._retire(self.server)
            await finish(*self._retiring)

    async def _attempt(self) -> Outcome:
        """Serve a fresh incarnation when needed and register it."""
        try:
            async with self._turns:
                if socket_identity(self._registration.socket) is None:
                    return self._without_kubelet()
                if self.server is None or self.server.gone:
                    await self._new_incarnation()
                return await self._register()
        except (grpc.RpcError, OSError, ValueError) as error:
            self._set_problem(f"cannot serve or register {self.spec.resource}: {error}")
            self._warn_once(f"{self.spec}: {self.problem} (retrying; logged once)")
        except Exception:  # retried: a plugin must never take the agent down
            self._set_problem(f"unexpected error while serving {self.spec.resource}")
            self._warn_once(f"{self.spec}: {self.problem}", exc_info=True)
        return Outcome.FAILED

    async def _new_incarnation(self) -> None:
        old, self.server = self.server, None
        self._epoch += 1
        if old is not None:
            self._retire(old)
        server = PluginServer(
            self._handlers, self._directory, self.spec.resource, self._servicer.options
        )
        await server.start()
        self.server = server

    def _without_kubelet(self) -> Outcome:
        """No kubelet serves. One that starts deletes every plugin socket, so the incarnation
        is stopped now, while nothing calls it, not once the kubelet is back and a thousand
        plugins register again (stopping them took a tenth of that time), and a fresh one is
        served when it is."""
        self._registered_on = None
        if self.server is not None:
            self._epoch += 1
            self._retire(self.server)
            self.server = None
        log.debug("%s: waiting for %s", self.spec, self._registration.socket)
        return Outcome.NO_KUBELET

    def _retire(self, server: PluginServer) -> None:
        """Stop a previous incarnation without waiting for it: its socket is gone or about to
        be, and the next one need not wait (a thousand of them after a kubelet restart)."""
        task = asyncio.create_task(server.stop())
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)
        task.add_done_callback(lambda _: self._churned())

    async def _register(self) -> Outcome:
        assert self.server is not None
        # Registering the socket served now with the kubelet serving now answers every sign so
        # far: one that came while this plugin waited for its turn (a thousand wait after a
        # kubelet restart, each woken by every tick) must not send it to the back of the queue.
        self._wake.clear()
        if self.server.gone:
            self._wake.set()
            return Outcome.FAILED
        kubelet = self._registered_on = socket_identity(self._registration.socket)
        if kubelet is None:
            return self._without_kubelet()
        self._epoch += 1
        try:
            done = await self._unless_woken(
                self._registration.register(
                    self.server.register_request(), kubelet, self._register_timeout
                )
            )
        except grpc.aio.AioRpcError as error:
            self._set_problem(
                f"the kubelet refused to register {self.spec.resource}: {error.details()}"
            )
            self._warn_once(f"{self.spec}: {self.problem} (retrying; logged once)")
            return Outcome.FAILED
        if not done:
            return Outcome.FAILED  # woken: a sign calls for a fresh attempt at once
        # Once at INFO; again (a thousand plugins after each kubelet restart) at DEBUG.
        level = logging.DEBUG if self._registered_before else logging.INFO
        log.log(level, "%s registered as %s", self.spec, self.server.name)
        self._registered_before = True
        return Outcome.REGISTERED

    async def _unless_woken(self, call: Coroutine[Any, Any, None]) -> bool:
        """Await `call`, but give up on it as soon as a sign calls for a fresh attempt.

        A kubelet that restarts during Register dials a socket it has just deleted and waits
        its whole dial timeout; the deleted socket is noticed sooner, and a new attempt wins.
        """
        registering = self._registering = asyncio.ensure_future(call)
        try:
            await registering
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # this plugin is being stopped
            return False  # woken
        finally:
            self._registering = None
        return True

    def _stream_opened(self) -> Callable[[], None]:
        epoch = self._epoch

        def ended() -> None:
            if epoch == self._epoch and self._registering is None:
                log.debug("%s: kubelet closed ListAndWatch, registering again", self.spec)
                self._wake_up()

        return ended
