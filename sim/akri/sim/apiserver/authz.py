"""RBAC: may this user do this verb on this resource? Decided from the RBAC objects stored.

Kubernetes' RBAC rules, without aggregated ClusterRoles: a ClusterRoleBinding grants its
ClusterRole everywhere, a RoleBinding grants its Role or ClusterRole in its own namespace. A
rule matches by verb, API group, resource (`res`, `res/sub`, `*/sub`, `*`) and, when it lists
any, resource name. Members of `system:masters` (the admin kubeconfig) may do anything.
Refusals carry the real API server's 403 message. Every decision can be recorded per user
(`AccessLog`), so a test can compare a program's RBAC with what it really calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from multidict import CIMultiDictProxy

from akri.sim.apiserver import errors
from akri.sim.apiserver.authn import ADMIN, ANONYMOUS, AUTHENTICATED, NOBODY, TokenIssuer, User

JSON = dict[str, Any]

RBAC_GROUP = "rbac.authorization.k8s.io"
# Lists the stored objects of an RBAC kind ("roles", "clusterroles", ...), all namespaces.
Lister = Callable[[str], list[JSON]]


@dataclass(frozen=True)
class Attributes:
    """What a resource request does, in the terms RBAC rules use."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def forbidden(user: User, request: Attributes, reason: str = "") -> errors.ApiError:
    """The 403 a real API server answers, word for word."""
    resource = request.resource + (f"/{request.subresource}" if request.subresource else "")
    scope = (
        f'in the namespace "{request.namespace}"' if request.namespace else "at the cluster scope"
    )
    message = (
        f'User "{user.name}" cannot {request.verb} resource "{resource}" in API group '
        f'"{request.group}" {scope}'
    )
    if reason:
        message += f": {reason}"
    qualified = f"{request.resource}.{request.group}" if request.group else request.resource
    named = f'{qualified} "{request.name}"' if request.name else qualified
    details: JSON = {"kind": request.resource}
    if request.name:
        details["name"] = request.name
    if request.group:
        details["group"] = request.group
    return errors.ApiError(403, "Forbidden", f"{named} is forbidden: {message}", details)


def _rule_allows(rule: JSON, request: Attributes) -> bool:
    def has(key: str, value: str) -> bool:
        listed = rule.get(key) or []
        return "*" in listed or value in listed

    if not has("verbs", request.verb) or not has("apiGroups", request.group):
        return False
    combined = request.resource + (f"/{request.subresource}" if request.subresource else "")
    resources = rule.get("resources") or []
    if not (
        "*" in resources
        or combined in resources
        or (request.subresource and f"*/{request.subresource}" in resources)
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or request.name in names


def _subject_is(subject: JSON, user: User, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return user.service_account == (namespace, name)
    return False


class Authorizer:
    """RBAC over the objects `lister` returns, read afresh at every decision."""

    def __init__(self, lister: Lister) -> None:
        self._list = lister

    def check(self, user: User, request: Attributes) -> None:
        """Return when allowed; raise the 403 otherwise."""
        if user.is_admin:
            return
        problems: list[str] = []
        for rules in self._granted(user, request.namespace, problems):
            if any(_rule_allows(rule, request) for rule in rules):
                return
        raise forbidden(user, request, f"RBAC: {', '.join(problems)}" if problems else "")

    def allows(self, user: User, request: Attributes) -> bool:
        try:
            self.check(user, request)
        except errors.ApiError:
            return False
        return True

    def allows_path(self, user: User, verb: str, path: str) -> bool:
        """A non-resource request (`/healthz`, `/api`): rules' `nonResourceURLs`, where a
        trailing `*` matches any rest of the path."""
        if user.is_admin:
            return True
        for rules in self._granted(user, "", []):
            for rule in rules:
                verbs, urls = rule.get("verbs") or [], rule.get("nonResourceURLs") or []
                if ("*" in verbs or verb in verbs) and any(
                    url == path or (url.endswith("*") and path.startswith(url[:-1])) for url in urls
                ):
                    return True
        return False

    def rules(self, user: User, namespace: str) -> list[JSON]:
        """Every rule granted to the user in the namespace (cluster-wide ones included)."""
        if user.is_admin:
            return [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                    {"verbs": ["*"], "nonResourceURLs": ["*"]}]  # fmt: skip
        return [rule for rules in self._granted(user, namespace, []) for rule in rules]

    def _granted(self, user: User, namespace: str, problems: list[str]) -> Iterable[list[JSON]]:
        """The rules of every role bound to the user where the request applies."""
        roles = {
            (r["metadata"]["namespace"], r["metadata"]["name"]): r for r in self._list("roles")
        }
        cluster_roles = {r["metadata"]["name"]: r for r in self._list("clusterroles")}
        bindings = [("", b) for b in self._list("clusterrolebindings")]
        if namespace:
            bindings += [
                (namespace, b)
                for b in self._list("rolebindings")
                if b["metadata"].get("namespace") == namespace
            ]
        for binding_namespace, binding in bindings:
            if not any(
                _subject_is(s, user, binding_namespace) for s in binding.get("subjects") or []
            ):
                continue
            ref = binding.get("roleRef") or {}
            role = (
                cluster_roles.get(ref.get("name", ""))
                if ref.get("kind") == "ClusterRole"
                else roles.get((binding_namespace, ref.get("name", "")))
            )
            if role is None:
                kind = "clusterrole" if ref.get("kind") == "ClusterRole" else "role"
                problems.append(f'{kind}.{RBAC_GROUP} "{ref.get("name", "")}" not found')
                continue
            yield role.get("rules") or []


@dataclass(frozen=True)
class Access:
    """One kind of call a user made, and whether it was allowed."""

    user: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    allowed: bool


class AccessLog:
    """The distinct calls each user made, in order of first use (GET /_sim/access)."""

    def __init__(self) -> None:
        self._seen: dict[Access, None] = {}

    def record(self, user: User, request: Attributes, allowed: bool) -> None:
        # Field by field: dataclasses.asdict deep-copies, on every request the server serves.
        r = request
        access = Access(
            user.name, r.verb, r.group, r.resource, r.subresource, r.namespace, r.name, allowed
        )
        self._seen.setdefault(access, None)

    def entries(self, user: str | None = None) -> list[JSON]:
        return [asdict(a) for a in self._seen if user is None or a.user == user]

    def clear(self) -> None:
        self._seen.clear()


class Guard:
    """Authentication, authorization and the access log, in the order a request meets them.

    Without an `Authorizer` (the default for unit tests) every request is allowed and a token
    the server does not know counts as anonymous; with one, an unknown token is refused (401).
    A request with no credentials on the plain-HTTP port is the admin's, as on kube-apiserver's
    former insecure port: kubectl sends no bearer token over plain HTTP, so the admin
    kubeconfig's token never arrives there. Over TLS it is anonymous, as on a real cluster.
    """

    def __init__(
        self, tokens: TokenIssuer, authorizer: Authorizer | None, access: AccessLog
    ) -> None:
        self.tokens = tokens
        self._authorizer = authorizer
        self._access = access

    @property
    def authorizer(self) -> Authorizer | None:
        return self._authorizer

    def authenticate(
        self, authorization: str | None, secure: bool, impersonation: Impersonation | None = None
    ) -> User:
        """The caller, or whom it impersonates when it may; else raise its 401 or 403."""
        if self._authorizer is None:
            try:
                user = self.tokens.authenticate(authorization)
            except errors.ApiError:
                user = NOBODY
        else:
            user = self.tokens.authenticate(authorization)
            if user is NOBODY and not secure and not authorization:
                user = ADMIN
        if impersonation is None:
            return user
        for wanted in impersonation.attributes():
            if self._authorizer is not None and not self._authorizer.allows(user, wanted):
                self._access.record(user, wanted, False)
                raise forbidden(user, wanted)
        return impersonation.user()

    def admit(
        self,
        authorization: str | None,
        secure: bool,
        request: Attributes,
        impersonation: Impersonation | None = None,
    ) -> User:
        """The caller (or whom it impersonates), when it may make the request; else raise its
        401 or 403."""
        user = self.authenticate(authorization, secure, impersonation)
        if self._authorizer is None:
            self._access.record(user, request, True)
            return user
        try:
            self._authorizer.check(user, request)
        except errors.ApiError:
            self._access.record(user, request, False)
            raise
        self._access.record(user, request, True)
        return user


@dataclass(frozen=True)
class Impersonation:
    """`Impersonate-User` and `Impersonate-Group` headers (`kubectl --as`, `--as-group`): the
    request is made as that user, once RBAC grants the caller `impersonate` on each."""

    name: str
    groups: tuple[str, ...] = ()

    @classmethod
    def of(cls, headers: CIMultiDictProxy[str]) -> Impersonation | None:
        name = headers.get("Impersonate-User")
        groups = tuple(headers.getall("Impersonate-Group", ()))
        if name is None:
            if groups:
                raise errors.internal(
                    f"requested groups {list(groups)} without impersonating a user"
                )
            return None
        return cls(name, groups)

    def attributes(self) -> list[Attributes]:
        """What the caller must be allowed to impersonate."""
        account = User(self.name).service_account
        wanted = (
            Attributes("impersonate", "", "serviceaccounts", namespace=account[0], name=account[1])
            if account
            else Attributes("impersonate", "", "users", name=self.name)
        )
        return [wanted, *(Attributes("impersonate", "", "groups", name=g) for g in self.groups)]

    def user(self) -> User:
        groups = list(self.groups)
        account = User(self.name).service_account
        if account and not groups:
            groups = ["system:serviceaccounts", f"system:serviceaccounts:{account[0]}"]
        if self.name != ANONYMOUS and AUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
        return User(self.name, tuple(groups))
