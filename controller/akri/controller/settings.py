"""The controller's settings, all from environment variables (the Deployment sets them).

Checked up front: a typo stops the controller at start, naming the variable and the problem,
instead of showing up later as brokers that never appear.
"""

from __future__ import annotations

import datetime
import socket
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import BeforeValidator, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from akri.controller.admission import Policy
from akri.controller.context import Tuning
from akri.controller.leader import LeaseTiming
from akri.controller.serving_certificate import Wanted
from akri.dra.mode import Mode
from akri.durations import Duration
from akri.logs import LogFormat
from akri.settings import load

PositiveDuration = Annotated[Duration, Field(gt=0)]


class ControllerSettings(BaseSettings):
    """One field per environment variable: `node_grace` is read from NODE_GRACE."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    kubeconfig: Path | None = None
    """A kubeconfig file; the in-cluster service account when unset."""
    akri_namespace: str | None = None
    """Follow Configurations, Instances and brokers of this namespace only; all when unset."""
    pod_namespace: str = "default"
    """The controller's own namespace (downward API): where its leader Lease lives."""
    pod_name: str | None = None
    """The controller Pod's name (downward API): its identity in the Lease, with a suffix."""
    node_grace: Duration = 300.0
    """How long a node may be not Ready before it is taken out of Instances."""
    pending_grace: PositiveDuration = 300.0
    """How long a broker Pod may stay Pending before it is recreated."""
    broker_backoff_initial: PositiveDuration = 2.0
    """Wait before recreating a broker that failed the first time; doubles per failure."""
    broker_backoff_max: PositiveDuration = 300.0
    """Longest wait before recreating a failing broker."""
    leader_election: bool = True
    """Elect one acting replica through a Lease; disable only for a single replica."""
    lease_name: str = "akri-controller"
    """Name of the leader Lease in POD_NAMESPACE."""
    lease_duration: PositiveDuration = 15.0
    """How long a leader's Lease holds without renewal before another replica may take it."""
    lease_renew_interval: PositiveDuration = 5.0
    """How often the leader renews its Lease."""
    lease_renew_deadline: PositiveDuration = 10.0
    """How long the leader keeps trying to renew before it gives up leading."""
    lease_retry_interval: PositiveDuration = 2.0
    """How often a standby replica tries to take the Lease."""
    workers: int = Field(default=8, ge=1, le=256)
    """Reconciles run at once (different objects only)."""
    metrics_port: int = Field(default=8080, ge=0, le=65535)
    """Port of /metrics, /healthz and /readyz; 0 serves none of them."""
    akri_mode: Mode = Mode.DEVICE_PLUGIN
    """`device-plugin`, `dra` or `auto` (DRA when the API serves resource.k8s.io/v1)."""
    webhook_port: int = Field(default=0, ge=0, le=65535)
    """HTTPS port of the Configuration admission webhook; 0 serves none."""
    webhook_cert_dir: Path = Path("/etc/akri/webhook")
    """Directory of the webhook's tls.crt and tls.key, read again when they change."""
    webhook_cert_secret: str = ""
    """Secret (in POD_NAMESPACE) in which the controller makes and renews the webhook's
    certificate itself, writing it into WEBHOOK_CERT_DIR; empty: the files come from elsewhere
    (a mounted Secret of cert-manager)."""
    webhook_configuration: str = ""
    """The ValidatingWebhookConfiguration whose caBundle the controller keeps (with
    WEBHOOK_CERT_SECRET)."""
    webhook_service: str = ""
    """The webhook's Service in POD_NAMESPACE: the certificate's names (with
    WEBHOOK_CERT_SECRET)."""
    admission_udev_subsystems: str = ""
    """Comma-separated subsystems the webhook lets udev rules match; empty: any."""
    admission_trusted_namespaces: str = ""
    """Comma-separated namespaces whose Configurations the subsystem rule does not bind."""
    webhook_cert_validity: PositiveDuration = 365 * 86400.0
    """Lifetime of a certificate the controller makes; renewed with a third of it left."""
    log_level: Annotated[
        Literal["DEBUG", "INFO", "WARNING", "ERROR"], BeforeValidator(lambda v: str(v).upper())
    ] = "INFO"
    """DEBUG, INFO, WARNING or ERROR."""
    log_format: LogFormat = "json"
    """json (one object per line) or text."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.broker_backoff_initial > self.broker_backoff_max:
            raise ValueError("BROKER_BACKOFF_INITIAL must not exceed BROKER_BACKOFF_MAX")
        self.lease_timing()  # raises ValueError when the lease times do not fit together
        if self.webhook_cert_secret and not (self.webhook_configuration and self.webhook_service):
            raise ValueError("WEBHOOK_CERT_SECRET needs WEBHOOK_CONFIGURATION and WEBHOOK_SERVICE")
        return self

    def admission_policy(self) -> Policy:
        """What the webhook allows, from ADMISSION_UDEV_SUBSYSTEMS and
        ADMISSION_TRUSTED_NAMESPACES."""

        def names(text: str) -> frozenset[str]:
            return frozenset(n.strip() for n in text.split(",") if n.strip())

        return Policy(
            names(self.admission_udev_subsystems), names(self.admission_trusted_namespaces)
        )

    def webhook_certificate(self) -> Wanted:
        """The certificate the webhook's Service names need."""
        host = f"{self.webhook_service}.{self.pod_namespace}.svc"
        return Wanted(
            common_name=host,
            dns_names=(host, f"{host}.cluster.local"),
            validity=datetime.timedelta(seconds=self.webhook_cert_validity),
        )

    def tuning(self) -> Tuning:
        return Tuning(
            namespace=self.akri_namespace,
            pending_grace=self.pending_grace,
            node_grace=self.node_grace,
            backoff_initial=self.broker_backoff_initial,
            backoff_max=self.broker_backoff_max,
            workers=self.workers,
            mode=self.akri_mode,
        )

    def lease_timing(self) -> LeaseTiming:
        return LeaseTiming(
            duration=self.lease_duration,
            renew_interval=self.lease_renew_interval,
            renew_deadline=self.lease_renew_deadline,
            retry_interval=self.lease_retry_interval,
        )

    def identity_base(self) -> str:
        return self.pod_name or socket.gethostname()


def load_settings() -> ControllerSettings:
    """The settings from the process environment; SettingsError explains what is wrong."""
    return load(ControllerSettings)
