"""Who is calling: the admin token, service-account tokens the server issued, or nobody.

Service-account tokens are JWTs (HS256, signed with a key of this server's own) carrying the
claims a real API server puts in a bound token: `sub` = `system:serviceaccount:<ns>:<name>`,
`aud`, `exp`, and the account's uid under `kubernetes.io`. They are issued through the
TokenRequest API (`POST .../serviceaccounts/<name>/token`, what `kubectl create token` and the
kubelet's projected token volumes use) and by `TokenIssuer.issue` for the simulated kubelets.
A token stops working when it expires or when its ServiceAccount is deleted (uid check).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from akri.sim.apiserver import errors

JSON = dict[str, Any]

ISSUER = "https://kubernetes.default.svc.cluster.local"
DEFAULT_AUDIENCES = (ISSUER,)
DEFAULT_EXPIRATION_S = 3600
MIN_EXPIRATION_S = 600
ADMIN_USER = "kubernetes-admin"
MASTERS = "system:masters"
ANONYMOUS = "system:anonymous"
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()

    @property
    def is_admin(self) -> bool:
        return MASTERS in self.groups

    @property
    def service_account(self) -> tuple[str, str] | None:
        """(namespace, name) when the user is a service account."""
        prefix, _, rest = self.name.partition("system:serviceaccount:")
        namespace, _, name = rest.partition(":")
        return (namespace, name) if not prefix and name else None


ADMIN = User(ADMIN_USER, (MASTERS, AUTHENTICATED))
NOBODY = User(ANONYMOUS, ("system:unauthenticated",))


def service_account_user(namespace: str, name: str) -> User:
    return User(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenIssuer:
    """Issues and checks this server's tokens; `account_uid` looks a ServiceAccount's uid up."""

    def __init__(
        self,
        admin_token: str,
        account_uid: Callable[[str, str], str | None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._admin_token = admin_token
        self._account_uid = account_uid
        self._clock = clock
        self._key = secrets.token_bytes(32)

    def issue(
        self,
        namespace: str,
        name: str,
        audiences: tuple[str, ...] = DEFAULT_AUDIENCES,
        expiration_s: int = DEFAULT_EXPIRATION_S,
    ) -> tuple[str, int]:
        """A token for the ServiceAccount and its expiry (Unix seconds); 404 when it is absent."""
        uid = self._account_uid(namespace, name)
        if uid is None:
            raise errors.not_found("", "serviceaccounts", name)
        now = int(self._clock())
        expires = now + expiration_s
        claims = {
            "iss": ISSUER,
            "sub": f"system:serviceaccount:{namespace}:{name}",
            "aud": list(audiences),
            "iat": now,
            "nbf": now,
            "exp": expires,
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
        }
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        return f"{header}.{payload}.{self._sign(f'{header}.{payload}')}", expires

    def token_request(self, namespace: str, name: str, body: Any) -> JSON:
        """The TokenRequest answer: the request with `status.token` and its expiry."""
        request = body if isinstance(body, dict) else {}
        spec = dict(request.get("spec") or {})
        expiration = int(spec.get("expirationSeconds") or DEFAULT_EXPIRATION_S)
        if expiration < MIN_EXPIRATION_S:
            raise errors.invalid(
                "authentication.k8s.io", "TokenRequest", name,
                [("spec.expirationSeconds",
                  f"Invalid value: {expiration}: may not specify a duration less than 10 minutes")],
            )  # fmt: skip
        audiences = tuple(spec.get("audiences") or DEFAULT_AUDIENCES)
        token, expires = self.issue(namespace, name, audiences, expiration)
        spec.update(audiences=list(audiences), expirationSeconds=expiration)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires))
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {**(request.get("metadata") or {}), "name": name, "namespace": namespace},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": stamp},
        }

    def authenticate(self, authorization: str | None) -> User:
        """The caller of a request with this Authorization header; 401 for a bad token."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return NOBODY
        if hmac.compare_digest(token, self._admin_token):
            return ADMIN
        claims = self._verified_claims(token)
        if claims is None:
            raise errors.ApiError(401, "Unauthorized", "Unauthorized")
        account = claims["kubernetes.io"]
        namespace, name = account["namespace"], account["serviceaccount"]["name"]
        return service_account_user(namespace, name)

    def _verified_claims(self, token: str) -> JSON | None:
        try:
            header, payload, signature = token.split(".")
            if not hmac.compare_digest(signature, self._sign(f"{header}.{payload}")):
                return None
            claims: JSON = json.loads(_unb64(payload))
            account = claims["kubernetes.io"]
            uid = self._account_uid(account["namespace"], account["serviceaccount"]["name"])
        except (ValueError, KeyError, TypeError):
            return None
        if claims.get("exp", 0) <= self._clock() or uid != account["serviceaccount"].get("uid"):
            return None
        return claims

    def _sign(self, signed: str) -> str:
        return _b64(hmac.new(self._key, signed.encode(), hashlib.sha256).digest())
