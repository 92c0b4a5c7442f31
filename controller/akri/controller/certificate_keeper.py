"""The webhook's certificate made and renewed by the controller itself (no cert-manager needed).

Every replica runs a keeper: it reads the Secret the chart created (empty at first), writes a
new certificate into it when `serving_certificate.renewed` says so (guarded by the Secret's
resourceVersion, so of two replicas renewing at once one wins and the other takes its
result), puts the CA bundle into the ValidatingWebhookConfiguration's `caBundle`, and only then
writes the pair into the directory the webhook server reads. The API server thus trusts a new
CA before any replica serves a certificate it signed.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.backoff import Backoff
from akri.controller.serving_certificate import (
    CA_FILE,
    CERT_FILE,
    KEY_FILE,
    Wanted,
    renewed,
)
from akri.kube.calls import call, describe
from akri.service import Service

log = logging.getLogger(__name__)

HTTP_CONFLICT = 409
ATTEMPTS = 5
RETRY_LIMIT_S = 30.0
"""The longest wait before a failed round is tried again: the webhook does not serve until a
round succeeds, so after a long API outage it must not wait out the renewal interval."""
Clock = Callable[[], datetime.datetime]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _write_atomically(path: Path, content: bytes) -> None:
    temporary = path.with_name(f".{path.name}.new")
    temporary.write_bytes(content)
    temporary.chmod(0o600)
    os.replace(temporary, path)


class CertificateKeeper(Service):
    """Keeps Secret `secret` (in `namespace`), the `webhook_configuration`'s caBundle and the
    files in `cert_dir` current: `sync()` once, or every `interval` seconds while started."""

    def __init__(
        self,
        api_client: client.ApiClient,
        namespace: str,
        secret: str,
        webhook_configuration: str,
        cert_dir: Path,
        wanted: Wanted,
        *,
        interval: float = 3600.0,
        retry: float = 1.0,
        retry_limit: float = RETRY_LIMIT_S,
        clock: Clock = _now,
    ) -> None:
        self._core = client.CoreV1Api(api_client)
        self._admission = client.AdmissionregistrationV1Api(api_client)
        self._namespace = namespace
        self._secret = secret
        self._configuration = webhook_configuration
        self._cert_dir = cert_dir
        self._wanted = wanted
        self._interval = interval
        self._retry = retry
        self._retry_limit = retry_limit
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()
        """Set once the files in `cert_dir` hold a certificate the API server trusts."""

    async def sync(self) -> None:
        """One round; raises ApiException or OSError when it could not finish."""
        data = await self._current_secret()
        await self._trust(data[CA_FILE])
        await asyncio.to_thread(self._write_files, data)

    async def _current_secret(self) -> dict[str, bytes]:
        for _ in range(ATTEMPTS):
            stored = await call(self._core.read_namespaced_secret, self._secret, self._namespace)
            data = {k: base64.b64decode(v) for k, v in (stored.get("data") or {}).items()}
            fresh = renewed(data, self._wanted, self._clock())
            if fresh is None:
                return data
            body = {
                **stored,
                "data": {k: base64.b64encode(v).decode() for k, v in fresh.items()},
            }
            try:
                await call(
                    self._core.replace_namespaced_secret, self._secret, self._namespace, body
                )
            except ApiException as error:
                if error.status != HTTP_CONFLICT:
                    raise
                continue  # another replica renewed it: read and use theirs
            log.info("webhook certificate made in Secret %s/%s", self._namespace, self._secret)
            return fresh
        raise RuntimeError(f"Secret {self._namespace}/{self._secret} kept changing")

    async def _trust(self, bundle: bytes) -> None:
        encoded = base64.b64encode(bundle).decode()
        for _ in range(ATTEMPTS):
            stored: dict[str, Any] = await call(
                self._admission.read_validating_webhook_configuration, self._configuration
            )
            hooks = stored.get("webhooks") or []
            if all(h.get("clientConfig", {}).get("caBundle") == encoded for h in hooks):
                return
            for hook in hooks:
                hook.setdefault("clientConfig", {})["caBundle"] = encoded
            try:
                await call(
                    self._admission.replace_validating_webhook_configuration,
                    self._configuration,
                    stored,
                )
            except ApiException as error:
                if error.status != HTTP_CONFLICT:
                    raise
                continue
            log.info("caBundle of %s updated", self._configuration)
            return
        raise RuntimeError(f"ValidatingWebhookConfiguration {self._configuration} kept changing")

    def _write_files(self, data: dict[str, bytes]) -> None:
        self._cert_dir.mkdir(parents=True, exist_ok=True)
        for name in (KEY_FILE, CERT_FILE):  # the server reloads when either changes
            path = self._cert_dir / name
            if not path.exists() or path.read_bytes() != data[name]:
                _write_atomically(path, data[name])

    async def _keep(self) -> None:
        backoff = Backoff(initial=self._retry, maximum=min(self._retry_limit, self._interval))
        while True:
            try:
                await self.sync()
            except (ApiException, OSError, RuntimeError) as error:  # tried again, sooner
                log.warning("webhook certificate not made or checked: %s", describe(error))
                await asyncio.sleep(backoff.next_delay())
                continue
            backoff.reset()
            self.ready.set()
            await asyncio.sleep(self._interval)

    async def start(self) -> None:
        """Never fails: until a round succeeds (`ready`), rounds are retried with back-off, so
        a missing Secret or RBAC costs the webhook, not the controller's other work."""
        self._task = asyncio.create_task(self._keep(), name="webhook-certificate-keeper")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
