"""Who is calling: the admin token, service-account tokens the server issued, or nobody.

Service-account tokens are JWTs (HS256, signed with a key of this server's own) carrying the
claims a real API server puts in a bound token: `sub` = `system:serviceaccount:<ns>:<name>`,
`aud`, `exp`, `jti`, and the account's uid under `kubernetes.io`. They are issued through the
TokenRequest API (`POST .../serviceaccounts/<name>/token`, what `kubectl create token` and the
kubelet's projected token volumes use) and by `TokenIssuer.issue` for the simulated kubelets.
A token bound to a Pod (`boundObjectRef`) also names the Pod's node, one bound to a Node names
that node; the caller then carries them in `extra` (`authentication.kubernetes.io/node-name`,
..., Kubernetes >= 1.32), which admission policies read to tell one node's agent from another's.
A token stops working when it expires or when its ServiceAccount, or the object it is bound
to, is deleted (uid check).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import uuid
from collections.abc import Callable, Mapping
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
EXTRA_PREFIX = "authentication.kubernetes.io/"
# The kinds a token may be bound to, as TokenRequest's boundObjectRef names them.
BOUND_KINDS = {"Pod": "pods", "Node": "nodes", "Secret": "secrets"}
ANONYMOUS = "system:anonymous"
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    # (key, values) pairs, as `userInfo.extra` carries them (a tuple: a User is hashable).
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def extra_map(self) -> dict[str, list[str]]:
        return {key: list(values) for key, values in self.extra}

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


def service_account_user(namespace: str, name: str, extra: Mapping[str, str] | None = None) -> User:
    return User(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
        tuple((EXTRA_PREFIX + key, (value,)) for key, value in sorted((extra or {}).items())),
    )


@dataclass(frozen=True)
class Bound:
    """What a token is bound to: a Pod and the node it runs on, or a Node ((name, uid) each)."""

    pod: tuple[str, str] | None = None
    node: tuple[str, str] | None = None

    def claims(self) -> JSON:
        pairs = (("pod", self.pod), ("node", self.node))
        return {kind: {"name": ref[0], "uid": ref[1]} for kind, ref in pairs if ref is not None}


# Finds a stored object: (plural, namespace, name) -> the object, or None.
Finder = Callable[[str, str, str], JSON | None]


def uid_of(obj: JSON | None) -> str | None:
    return None if obj is None else str((obj.get("metadata") or {}).get("uid", ""))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenIssuer:
    """Issues and checks this server's tokens; `find` looks up the ServiceAccounts, and the
    Pods and Nodes tokens are bound to."""

    def __init__(
        self, admin_token: str, find: Finder, clock: Callable[[], float] = time.time
    ) -> None:
        self._admin_token = admin_token
        self._find = find
        self._clock = clock
        self._key = secrets.token_bytes(32)

    def issue(
        self,
        namespace: str,
        name: str,
        audiences: tuple[str, ...] = DEFAULT_AUDIENCES,
        expiration_s: int = DEFAULT_EXPIRATION_S,
        bound: Bound | None = None,
    ) -> tuple[str, int]:
        """A token for the ServiceAccount and its expiry (Unix seconds); 404 when it is absent."""
        uid = uid_of(self._find("serviceaccounts", namespace, name))
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
            "jti": str(uuid.uuid4()),
            "kubernetes.io": {
                "namespace": namespace,
                "serviceaccount": {"name": name, "uid": uid},
                **(bound.claims() if bound else {}),
            },
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
        bound = self._bound(namespace, spec.get("boundObjectRef"))
        token, expires = self.issue(namespace, name, audiences, expiration, bound)
        spec.update(audiences=list(audiences), expirationSeconds=expiration)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires))
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {**(request.get("metadata") or {}), "name": name, "namespace": namespace},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": stamp},
        }

    def _bound(self, namespace: str, reference: Any) -> Bound | None:
        """The object `boundObjectRef` names (a Pod adds its node), checked as the API server
        checks it: it exists, with the uid given."""
        if not isinstance(reference, dict):
            return None
        kind, name = str(reference.get("kind", "")), str(reference.get("name", ""))
        plural = BOUND_KINDS.get(kind)
        if plural is None:
            raise errors.bad_request(f"cannot bind token for object of kind {kind}")
        found = self._find(plural, "" if kind == "Node" else namespace, name)
        if found is None:
            raise errors.not_found("", plural, name)
        uid = uid_of(found) or ""
        if reference.get("uid") and reference["uid"] != uid:
            raise errors.ApiError(
                409, "Conflict",
                f"the UID in the bound object reference ({reference['uid']}) does not match the "
                "UID in record. The object might have been deleted and then recreated",
            )  # fmt: skip
        if kind == "Node":
            return Bound(node=(name, uid))
        if kind == "Secret":
            return Bound()
        node = str((found.get("spec") or {}).get("nodeName") or "")
        node_uid = uid_of(self._find("nodes", "", node)) if node else None
        return Bound(pod=(name, uid), node=None if node_uid is None else (node, node_uid))

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
        extra = {
            f"{kind}-{field}": str(account[kind][field])
            for kind in ("pod", "node")
            if kind in account
            for field in ("name", "uid")
        }
        if claims.get("jti"):
            extra["credential-id"] = f"JTI={claims['jti']}"
        return service_account_user(namespace, name, extra)

    def _verified_claims(self, token: str) -> JSON | None:
        try:
            header, payload, signature = token.split(".")
            if not hmac.compare_digest(signature, self._sign(f"{header}.{payload}")):
                return None
            claims: JSON = json.loads(_unb64(payload))
            account = claims["kubernetes.io"]
            namespace = account["namespace"]
            expected = [("serviceaccounts", namespace, account["serviceaccount"])]
            expected += [("pods", namespace, account["pod"])] if "pod" in account else []
            expected += [("nodes", "", account["node"])] if "node" in account else []
            alive = all(
                uid_of(self._find(plural, ns, ref["name"])) == ref.get("uid")
                for plural, ns, ref in expected
            )
        except (ValueError, KeyError, TypeError):
            return None
        if claims.get("exp", 0) <= self._clock() or not alive:
            return None
        return claims

    def _sign(self, signed: str) -> str:
        return _b64(hmac.new(self._key, signed.encode(), hashlib.sha256).digest())
