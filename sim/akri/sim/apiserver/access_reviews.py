"""Access reviews: may a user do this? (`kubectl auth can-i`, `kubectl auth whoami`, webhooks).

SelfSubjectAccessReview and SelfSubjectRulesReview (`can-i --list`) answer for the caller, or
for whom it impersonates (`--as`); SubjectAccessReview for any user, to callers RBAC lets
create it. The self reviews are open to every authenticated user, as the bootstrap ClusterRole
`system:basic-user` opens them on a cluster. Answers come from the same RBAC decision that
authorizes requests, so a review never disagrees with what the server then does.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from akri.sim.apiserver import errors
from akri.sim.apiserver.authn import AUTHENTICATED, User
from akri.sim.apiserver.authz import Attributes, Guard, Impersonation
from akri.sim.apiserver.handlers import read_body

JSON = dict[str, Any]
AUTHORIZATION = "authorization.k8s.io"
AUTHENTICATION = "authentication.k8s.io"


async def _body(request: web.Request) -> JSON:
    body = await read_body(request)
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    return body


def _answer(kind: str, group: str, body: JSON, status: JSON) -> web.Response:
    answer: JSON = {
        "kind": kind,
        "apiVersion": f"{group}/v1",
        "metadata": {"creationTimestamp": None},
    }
    if kind != "SelfSubjectReview":  # the one review without a spec
        answer["spec"] = body.get("spec") or {}
    answer["status"] = status
    return web.json_response(answer, status=201)


def _resource_rule(rule: JSON) -> JSON | None:
    if not rule.get("resources"):
        return None
    keys = ("verbs", "apiGroups", "resources", "resourceNames")
    return {k: rule[k] for k in keys if rule.get(k)}


def _path_rule(rule: JSON) -> JSON | None:
    if not rule.get("nonResourceURLs"):
        return None
    return {"verbs": rule.get("verbs") or [], "nonResourceURLs": rule["nonResourceURLs"]}


class AccessReviews:
    """The review endpoints of one server, decided by its `Guard`."""

    def __init__(self, guard: Guard) -> None:
        self._guard = guard

    def routes(self) -> list[web.AbstractRouteDef]:
        base = f"/apis/{AUTHORIZATION}/v1"
        return [
            web.post(f"{base}/selfsubjectaccessreviews", self.self_access),
            web.post(f"{base}/subjectaccessreviews", self.subject_access),
            web.post(f"{base}/selfsubjectrulesreviews", self.self_rules),
            web.post(f"/apis/{AUTHENTICATION}/v1/selfsubjectreviews", self.whoami),
        ]

    def _caller(self, request: web.Request, plural: str, group: str = AUTHORIZATION) -> User:
        """The (impersonated) caller, when authenticated: the self reviews need nothing else."""
        user = self._guard.authenticate(
            request.headers.get("Authorization"), request.secure, Impersonation.of(request.headers)
        )
        if not user.is_admin and AUTHENTICATED not in user.groups:
            raise errors.forbidden(
                f'{plural}.{group} is forbidden: User "{user.name}" cannot create resource '
                f'"{plural}" in API group "{group}" at the cluster scope'
            )
        return user

    def _decide(self, user: User, spec: JSON, kind: str) -> JSON:
        resource, path = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        authorizer = self._guard.authorizer
        if isinstance(path, dict) and resource is None:
            allowed = authorizer is None or authorizer.allows_path(
                user, str(path.get("verb", "")), str(path.get("path", ""))
            )
        elif isinstance(resource, dict) and path is None:
            wanted = Attributes(
                *(str(resource.get(key) or "") for key in
                  ("verb", "group", "resource", "subresource", "namespace", "name"))
            )  # fmt: skip
            allowed = authorizer is None or authorizer.allows(user, wanted)
        else:
            raise errors.invalid(
                AUTHORIZATION, kind, "",
                [("spec.resourceAttributes", 'Invalid value: "null": exactly one of '
                  "nonResourceAttributes or resourceAttributes must be specified")],
            )  # fmt: skip
        return {"allowed": True} if allowed else {"allowed": False}

    async def self_access(self, request: web.Request) -> web.Response:
        user = self._caller(request, "selfsubjectaccessreviews")
        body = await _body(request)
        status = self._decide(user, body.get("spec") or {}, "SelfSubjectAccessReview")
        return _answer("SelfSubjectAccessReview", AUTHORIZATION, body, status)

    async def subject_access(self, request: web.Request) -> web.Response:
        self._guard.admit(
            request.headers.get("Authorization"),
            request.secure,
            Attributes("create", AUTHORIZATION, "subjectaccessreviews"),
            Impersonation.of(request.headers),
        )
        body = await _body(request)
        spec = body.get("spec") or {}
        if not spec.get("user") and not spec.get("groups"):
            raise errors.invalid(
                AUTHORIZATION, "SubjectAccessReview", "",
                [("spec.user", "Invalid value: \"\": at least one of user or group must be "
                  "specified")],
            )  # fmt: skip
        extra = tuple((k, tuple(v)) for k, v in (spec.get("extra") or {}).items())
        subject = User(str(spec.get("user") or ""), tuple(spec.get("groups") or ()), extra)
        return _answer(
            "SubjectAccessReview",
            AUTHORIZATION,
            body,
            self._decide(subject, spec, "SubjectAccessReview"),
        )

    async def self_rules(self, request: web.Request) -> web.Response:
        user = self._caller(request, "selfsubjectrulesreviews")
        body = await _body(request)
        namespace = str((body.get("spec") or {}).get("namespace") or "")
        authorizer = self._guard.authorizer
        rules = (
            authorizer.rules(user, namespace)
            if authorizer is not None
            else [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
        )
        status = {
            "resourceRules": [r for r in map(_resource_rule, rules) if r],
            "nonResourceRules": [r for r in map(_path_rule, rules) if r],
            "incomplete": False,
        }
        return _answer("SelfSubjectRulesReview", AUTHORIZATION, body, status)

    async def whoami(self, request: web.Request) -> web.Response:
        user = self._caller(request, "selfsubjectreviews", AUTHENTICATION)
        body = await _body(request)
        info = {"username": user.name, "groups": list(user.groups)}
        return _answer("SelfSubjectReview", AUTHENTICATION, body, {"userInfo": info})
