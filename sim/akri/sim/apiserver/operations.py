"""The API's verbs with Kubernetes semantics, independent of HTTP.

Every rule the agent and controller depend on is enforced here: optimistic concurrency on
`metadata.resourceVersion`, server-owned metadata, the status subresource split, generation
bumps, finalizers and `deletionTimestamp`, namespace existence, CRD schemas and registration.
Each verb runs to completion without yielding to the event loop, so a read-check-write is
atomic with respect to every other request.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from akri.json_copy import copy_json
from akri.sim.apiserver import cel_rules, crd, errors, metadata, patching
from akri.sim.apiserver.core_kinds import CRD_GROUP
from akri.sim.apiserver.resources import Registry, ResourceType
from akri.sim.apiserver.selectors import FieldSelector, LabelSelector
from akri.sim.apiserver.store import DryRun, Store
from akri.sim.apiserver.validation.meta import object_meta
from akri.sim.apiserver.watchcache import (
    ADDED,
    DELETED,
    MODIFIED,
    TICK,
    Subscription,
    Tick,
    WatchEvent,
)

JSON = dict[str, Any]

ORPHAN = "Orphan"
BACKGROUND = "Background"
FOREGROUND = "Foreground"
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
"""Refused deletion, as the NamespaceLifecycle admission plugin refuses it (the API server's
own `kubernetes` Service lives in `default`)."""


@dataclass(frozen=True)
class Selection:
    """Which objects a list, watch or deletecollection addresses."""

    namespace: str | None = None
    labels: LabelSelector = field(default_factory=LabelSelector)
    fields: FieldSelector = field(default_factory=FieldSelector)

    def matches(self, resource: ResourceType, obj: JSON) -> bool:
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(
            obj, resource.selectable_fields
        )


@dataclass(frozen=True)
class DeleteOptions:
    propagation: str | None = None
    uid: str | None = None
    resource_version: str | None = None

    @classmethod
    def parse(cls, body: Any, query_policy: str | None) -> DeleteOptions:
        body = body if isinstance(body, dict) else {}
        policy = body.get("propagationPolicy") or query_policy
        if policy is None and body.get("orphanDependents") is not None:
            policy = ORPHAN if body["orphanDependents"] else BACKGROUND
        if policy not in (None, ORPHAN, BACKGROUND, FOREGROUND):
            raise errors.bad_request(f"unsupported propagationPolicy {policy!r}")
        preconditions = body.get("preconditions") or {}
        return cls(policy, preconditions.get("uid"), preconditions.get("resourceVersion"))


def _content(obj: JSON) -> JSON:
    """What a generation bump looks at: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _encode_continue(revision: int, after: tuple[str, str]) -> str:
    token = json.dumps({"rv": revision, "after": list(after)}).encode()
    return base64.urlsafe_b64encode(token).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        after = json.loads(base64.urlsafe_b64decode(token.encode()))["after"]
        return (str(after[0]), str(after[1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error) as error:
        raise errors.bad_request(f"invalid continue token: {error}") from error


class Operations:
    """The verbs of every served kind over one `Store` and `Registry`."""

    def __init__(self, registry: Registry, store: Store, clock: Callable[[], str] = metadata.now):
        self.registry = registry
        self.store = store
        self._clock = clock
        for resource in registry:
            store.add_kind(resource.key)
        namespaces = self.kind("", "v1", "namespaces")
        for name in INITIAL_NAMESPACES:
            self.create(namespaces, None, {"metadata": {"name": name}})

    def dry_run(self) -> Operations:
        """These verbs as `dryRun=All` runs them: every default and check, nothing kept."""
        dry = copy.copy(self)
        dry.store = DryRun(self.store)
        return dry

    def kind(self, group: str, version: str, plural: str) -> ResourceType:
        resource = self.registry.lookup(group, version, plural)
        if resource is None:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return resource

    # ---- reads -------------------------------------------------------------------------

    def present(self, resource: ResourceType, obj: JSON) -> JSON:
        """The object as the requested version shows it (conversion strategy None)."""
        if obj.get("apiVersion") == resource.api_version and obj.get("kind") == resource.kind:
            return obj
        return {**obj, "apiVersion": resource.api_version, "kind": resource.kind}

    def get(self, resource: ResourceType, namespace: str, name: str) -> JSON:
        """A private copy the caller may change."""
        return self.present(resource, self._current(resource, namespace, name))

    def read(self, resource: ResourceType, namespace: str, name: str) -> JSON:
        """The stored object itself, to read or send and never to change (no copy)."""
        return self.present(resource, self._stored(resource, namespace, name))

    def list_objects(
        self,
        resource: ResourceType,
        selection: Selection,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> tuple[list[JSON], str | None]:
        """Matching objects (read-only), sorted, paged by `limit`/`continue`."""
        selection.fields.check_supported(resource.selectable_fields, resource.kind)
        candidates = self.store.objects(resource.key, selection.namespace)
        if continue_token:
            after = _decode_continue(continue_token)
            candidates = [o for o in candidates if metadata_key(o) > after]
        matching = [self.present(resource, o) for o in candidates if selection.matches(resource, o)]
        if limit and len(matching) > limit:
            page = matching[:limit]
            return page, _encode_continue(self.store.revision, metadata_key(page[-1]))
        return matching, None

    def watch(self, resource: ResourceType, selection: Selection, since: str | None) -> WatchFeed:
        """A feed of changes after `since`; without one, first the current objects as ADDED."""
        selection.fields.check_supported(resource.selectable_fields, resource.kind)
        hub = self.store.hub(resource.key)
        backlog: list[WatchEvent]
        if since in (None, "", "0"):
            revision = self.store.revision
            backlog = [
                WatchEvent(ADDED, obj, revision)
                for obj in self.store.objects(resource.key, selection.namespace)
            ]
            _, subscription = hub.subscribe(None)
        else:
            try:
                version = int(since or "")
            except ValueError as error:
                raise errors.bad_request(f"invalid resourceVersion {since!r}") from error
            backlog, subscription = hub.subscribe(version)
        return WatchFeed(self, resource, selection, backlog, subscription)

    # ---- writes ------------------------------------------------------------------------

    def create(
        self, resource: ResourceType, namespace: str | None, body: Any, strict: bool = False
    ) -> JSON:
        obj = self._checked_body(resource, namespace, body)
        meta = obj["metadata"]
        for server_field in metadata.SERVER_FIELDS:
            meta.pop(server_field, None)
        meta.pop("resourceVersion", None)
        if resource.namespaced:
            self._require_open_namespace(meta["namespace"])
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise errors.invalid(
                    resource.group,
                    resource.kind,
                    "",
                    [("metadata.name", "Required value: name or generateName is required")],
                )
            meta["name"] = self._free_name(resource, meta)
        meta["uid"] = metadata.new_uid()
        meta["creationTimestamp"] = self._clock()
        if resource.tracks_generation:
            meta["generation"] = 1
        if resource.has_status and resource.status_on_create is not None:
            obj.pop("status", None)
            if resource.status_on_create:
                obj["status"] = copy_json(resource.status_on_create)
        if resource.prepare_create is not None:
            resource.prepare_create(obj)
        if resource.normalize is not None:
            resource.normalize(obj)
        self._admit(resource, obj, strict)
        if self.store.peek(resource.key, meta.get("namespace", ""), meta["name"]) is not None:
            raise errors.already_exists(resource.group, resource.plural, meta["name"])
        if resource.key == (CRD_GROUP, "customresourcedefinitions"):
            obj["status"] = crd.established_status(obj, self._clock())
            self._serve_crd(obj)
        return self.present(resource, self.store.create(resource.key, obj))

    def update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str = "",
        strict: bool = False,
    ) -> JSON:
        """PUT: the body replaces the object, guarded by its resourceVersion."""
        current = self._stored(resource, namespace, name)
        obj = self._checked_body(resource, namespace or None, body, name)
        given = obj["metadata"].get("resourceVersion")
        if not given and not resource.unconditional_update:
            raise errors.invalid(
                resource.group,
                resource.kind,
                name,
                [
                    (
                        "metadata.resourceVersion",
                        "Invalid value: 0x0: must be specified for an update",
                    )
                ],
            )
        if given and given != current["metadata"]["resourceVersion"]:
            raise errors.stale_write(resource.group, resource.plural, name)
        return self._commit(resource, current, obj, subresource, strict)

    def patch(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        body: Any,
        subresource: str = "",
        strict: bool = False,
    ) -> JSON:
        """PATCH: the patched object must still carry the current resourceVersion."""
        current = self._stored(resource, namespace, name)
        patched = self.apply_patch(resource, current, content_type, body)
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise errors.bad_request("the patch must produce an object with metadata")
        obj = self._checked_body(resource, namespace or None, patched, name)
        if obj["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise errors.stale_write(resource.group, resource.plural, name)
        return self._commit(resource, current, obj, subresource, strict)

    def apply_patch(
        self, resource: ResourceType, current: JSON, content_type: str, body: Any
    ) -> Any:
        target = self.present(resource, copy_json(current))
        if content_type == patching.JSON_PATCH:
            return patching.json_patch(target, body)
        if content_type == patching.MERGE_PATCH or (
            content_type == patching.APPLY_PATCH and resource.custom
        ):
            return patching.merge_patch(target, body)
        if content_type in (patching.STRATEGIC_MERGE_PATCH, patching.APPLY_PATCH):
            if resource.custom:
                raise errors.unsupported_media_type(content_type, self.patch_types(resource))
            return patching.strategic_merge_patch(target, body)
        raise errors.unsupported_media_type(content_type, self.patch_types(resource))

    @staticmethod
    def patch_types(resource: ResourceType) -> list[str]:
        types = [patching.JSON_PATCH, patching.MERGE_PATCH, patching.APPLY_PATCH]
        return types if resource.custom else [*types, patching.STRATEGIC_MERGE_PATCH]

    def delete(
        self, resource: ResourceType, namespace: str, name: str, options: DeleteOptions
    ) -> tuple[JSON, bool]:
        """The object's last state and whether it is gone (False: finalizers hold it)."""
        current = self._current(resource, namespace, name)
        if resource.key == ("", "namespaces") and name in IMMORTAL_NAMESPACES:
            raise errors.forbidden(
                f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            )
        meta = current["metadata"]
        if options.uid and options.uid != meta["uid"]:
            raise errors.conflict(
                resource.group,
                resource.plural,
                name,
                f"Precondition failed: UID in precondition: {options.uid}, "
                f"UID in object meta: {meta['uid']}",
            )
        if options.resource_version and options.resource_version != meta["resourceVersion"]:
            raise errors.conflict(
                resource.group,
                resource.plural,
                name,
                "Precondition failed: ResourceVersion in precondition: "
                f"{options.resource_version}, ResourceVersion in object meta: "
                f"{meta['resourceVersion']}",
            )
        policy = options.propagation or (ORPHAN if resource.orphan_by_default else BACKGROUND)
        finalizers = list(meta.get("finalizers") or [])
        if policy == ORPHAN and ORPHAN_FINALIZER not in finalizers:
            finalizers.append(ORPHAN_FINALIZER)
        if policy == FOREGROUND and FOREGROUND_FINALIZER not in finalizers:
            finalizers.append(FOREGROUND_FINALIZER)
        if meta.get("deletionTimestamp"):
            return self.present(resource, current), False
        if not finalizers and not self._namespace_finalizers(resource, current):
            return self.present(resource, self._remove(resource, current)), True
        if finalizers:
            meta["finalizers"] = finalizers
        meta["deletionTimestamp"] = self._clock()
        meta["deletionGracePeriodSeconds"] = 0
        if resource.key == ("", "namespaces"):
            current["status"] = {"phase": "Terminating"}
        return self.present(resource, self.store.update(resource.key, current)), False

    def finalize(self, resource: ResourceType, obj: JSON, finalizer: str) -> None:
        """Drop one finalizer (as its owner would); removes the object if none remain."""
        updated = copy_json(obj)
        remaining = [f for f in updated["metadata"].get("finalizers") or [] if f != finalizer]
        updated["metadata"]["finalizers"] = remaining
        self._commit(resource, obj, updated, "", False)

    def finish_namespace(self, namespace: JSON) -> None:
        """The namespace controller's last step: an emptied namespace is removed."""
        resource = self.kind("", "v1", "namespaces")
        updated = copy_json(namespace)
        updated["spec"]["finalizers"] = []
        self._commit(resource, namespace, updated, "finalize", False)

    def bind(self, namespace: str, name: str, body: Any) -> None:
        """pods/binding: what the scheduler posts to place a pod on a node."""
        pods = self.kind("", "v1", "pods")
        pod = self._current(pods, namespace, name)
        target = (body or {}).get("target") or {}
        if not target.get("name"):
            raise errors.invalid("", "Binding", name, [("target.name", "Required value")])
        if pod["spec"].get("nodeName"):
            raise errors.conflict(
                "",
                "pods",
                name,
                f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"',
            )
        pod["spec"]["nodeName"] = target["name"]
        conditions = [
            c
            for c in pod.setdefault("status", {}).get("conditions") or []
            if c.get("type") != "PodScheduled"
        ]
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": self._clock()}
        )
        pod["status"]["conditions"] = conditions
        self.store.update(pods.key, pod)

    # ---- internals ---------------------------------------------------------------------

    def _current(self, resource: ResourceType, namespace: str, name: str) -> JSON:
        """A private copy of the stored object, for verbs that build on it in place."""
        return copy_json(self._stored(resource, namespace, name))

    def _stored(self, resource: ResourceType, namespace: str, name: str) -> JSON:
        """The stored object (read-only): `_commit` builds the next state beside it."""
        found = self.store.peek(resource.key, namespace if resource.namespaced else "", name)
        if found is None:
            raise errors.not_found(resource.group, resource.plural, name)
        return found

    def _checked_body(
        self, resource: ResourceType, namespace: str | None, body: Any, name: str | None = None
    ) -> JSON:
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        obj = copy_json(body)
        if obj.get("kind") not in (None, "", resource.kind):
            raise errors.bad_request(
                f"the kind in the data ({obj['kind']}) does not match the expected kind "
                f"({resource.kind})"
            )
        if obj.get("apiVersion") not in (None, "", resource.api_version):
            raise errors.other_api_version(obj["apiVersion"], resource.api_version)
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if name is not None and meta.get("name") not in (None, "", name):
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})"
            )
        if name is not None:
            meta["name"] = name
        if resource.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            meta["namespace"] = namespace or meta.get("namespace") or ""
            if not meta["namespace"]:
                raise errors.bad_request("a namespace is required for a namespaced kind")
        else:
            meta.pop("namespace", None)
        return obj

    def _require_open_namespace(self, name: str) -> None:
        namespace = self.store.peek(("", "namespaces"), "", name)
        if namespace is None:
            raise errors.not_found("", "namespaces", name)
        if namespace["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                f"unable to create new content in namespace {name} because it is being terminated"
            )

    def _free_name(self, resource: ResourceType, meta: JSON) -> str:
        for _ in range(16):
            candidate = metadata.generated_name(meta["generateName"])
            if self.store.peek(resource.key, meta.get("namespace", ""), candidate) is None:
                return candidate
        raise errors.already_exists(resource.group, resource.plural, meta["generateName"])

    def _admit(
        self, resource: ResourceType, obj: JSON, strict: bool, old: JSON | None = None
    ) -> None:
        """Defaults, pruning and validation: the checks every create and update (`old`) passes."""
        meta = obj["metadata"]
        problems = object_meta(meta, resource.name_check)
        if resource.structural is not None:
            resource.structural.apply_defaults(obj)
            unknown = resource.structural.prune(obj)
            if strict and unknown:
                listed = ", ".join(f'unknown field "{path}"' for path in unknown)
                raise errors.bad_request(f"strict decoding error: {listed}")
            problems += resource.structural.validate(obj)
            if not problems and resource.rules is not None:
                problems += cel_rules.violations(resource.rules, obj, old)
        if resource.key == (CRD_GROUP, "customresourcedefinitions"):
            crd.check(obj)
        if resource.validate is not None:
            try:
                problems += resource.validate(obj)
            except ValueError as error:
                raise errors.bad_request(
                    f'{resource.kind} in version "{resource.version}" cannot be handled as a '
                    f"{resource.kind}: {error}"
                ) from None
        if problems:
            raise errors.invalid(resource.group, resource.kind, meta["name"], problems)

    def _commit(
        self, resource: ResourceType, current: JSON, obj: JSON, subresource: str, strict: bool
    ) -> JSON:
        """Turn a proposed new state into the stored one; a no-op writes nothing."""
        old_meta = current["metadata"]
        if subresource == "status":
            proposed, obj = obj, copy_json(current)
            obj.pop("status", None)
            if "status" in proposed:
                obj["status"] = proposed["status"]
        elif subresource == "finalize":
            pass
        elif resource.has_status:
            obj.pop("status", None)
            if "status" in current:
                obj["status"] = copy_json(current["status"])
        if resource.normalize is not None:
            resource.normalize(obj)
        meta = obj["metadata"]
        for server_field in metadata.SERVER_FIELDS:
            meta.pop(server_field, None)
            if server_field in old_meta:
                meta[server_field] = old_meta[server_field]
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise errors.invalid(
                    resource.group,
                    resource.kind,
                    meta["name"],
                    [
                        (
                            "metadata.finalizers",
                            "Forbidden: no new finalizers can be added if the "
                            f"object is being deleted, found new finalizers {sorted(added)}",
                        )
                    ],
                )
        if not meta.get("finalizers"):
            meta.pop("finalizers", None)
        if not subresource and resource.validate_update is not None:
            refused = resource.validate_update(current, obj)
            if refused:
                raise errors.invalid(resource.group, resource.kind, meta["name"], refused)
        self._admit(resource, obj, strict, current)
        if resource.key == (CRD_GROUP, "customresourcedefinitions") and subresource != "status":
            obj["status"] = crd.established_status(obj, self._clock())
        if resource.tracks_generation and _content(obj) != _content(current):
            meta["generation"] = old_meta.get("generation", 1) + 1
        emptied = old_meta.get("deletionTimestamp") and not meta.get("finalizers")
        if emptied and not self._namespace_finalizers(resource, obj):
            return self.present(resource, self._remove(resource, obj))
        if obj == current:
            return self.present(resource, current)
        if resource.key == (CRD_GROUP, "customresourcedefinitions"):
            self._serve_crd(obj)
        return self.present(resource, self.store.update(resource.key, obj))

    @staticmethod
    def _namespace_finalizers(resource: ResourceType, obj: JSON) -> list[str]:
        if resource.key != ("", "namespaces"):
            return []
        return list((obj.get("spec") or {}).get("finalizers") or [])

    def _remove(self, resource: ResourceType, obj: JSON) -> JSON:
        meta = obj["metadata"]
        removed = self.store.delete(resource.key, meta.get("namespace", ""), meta["name"], obj)
        if resource.key == (CRD_GROUP, "customresourcedefinitions") and self.store.kept:
            names = removed["spec"]["names"]
            self.store.remove_kind((removed["spec"]["group"], names["plural"]))
            self.registry.remove(removed["spec"]["group"], names["plural"])
        return removed

    def _serve_crd(self, definition: JSON) -> None:
        if not self.store.kept:
            return
        kinds = crd.resource_types(definition)
        group, plural = definition["spec"]["group"], definition["spec"]["names"]["plural"]
        self.registry.remove(group, plural)
        for index, kind in enumerate(kinds):
            self.registry.add(kind, preferred=index == 0)
        self.store.add_kind((group, plural))


def _left(previous: JSON, current: JSON) -> JSON:
    """What a watcher sees of an object that left its selection: the last state it matched in,
    at the version of the change (cacheWatcher.convertToWatchEvent in
    k8s.io/apiserver/pkg/storage/cacher)."""
    version = current["metadata"].get("resourceVersion")
    return {**previous, "metadata": {**previous["metadata"], "resourceVersion": version}}


def metadata_key(obj: JSON) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


class WatchFeed:
    """One watch: replayed events, then live ones, filtered by the selection.

    An object that starts or stops matching the selection appears as ADDED (its new state) or
    DELETED (its last matching state), as a real server reports such transitions.
    """

    def __init__(
        self,
        operations: Operations,
        resource: ResourceType,
        selection: Selection,
        backlog: list[WatchEvent],
        subscription: Subscription,
    ) -> None:
        self._operations = operations
        self.resource = resource
        self._selection = selection
        self._namespace_only = not selection.labels.requirements and not selection.fields.terms
        """No label or field terms: an object matches by its namespace, which no change moves."""
        # Filtered up front, so an empty backlog means every initial event was delivered.
        self._backlog = deque(e for e in backlog if self._filtered(e) is not None)
        self._subscription = subscription
        self.dropped = False

    def _filtered(self, event: WatchEvent) -> tuple[str, JSON] | None:
        if self._namespace_only:
            namespace = self._selection.namespace
            if namespace is None or event.obj["metadata"].get("namespace", "") == namespace:
                return event.type, event.obj
            return None
        matches_now = self._selection.matches(self.resource, event.obj)
        if event.type == MODIFIED and event.previous is not None:
            matched_before = self._selection.matches(self.resource, event.previous)
            if matches_now and not matched_before:
                return ADDED, event.obj
            if matched_before and not matches_now:
                return DELETED, _left(event.previous, event.obj)
        return (event.type, event.obj) if matches_now else None

    async def next(self) -> tuple[str, JSON, WatchEvent] | Tick | None:
        """The next event for this watcher as (type, object, the stored change it shows);
        TICK when the reader's `tick` is due; None when the server ends the stream."""
        while True:
            if self._backlog:
                event: WatchEvent | Tick | None = self._backlog.popleft()
            else:
                event = await self._subscription.queue.get()
            if event is None or isinstance(event, Tick):
                return event
            filtered = self._filtered(event)
            if filtered is not None:
                return filtered[0], self._operations.present(self.resource, filtered[1]), event

    @property
    def backlog_empty(self) -> bool:
        return not self._backlog

    def tick(self) -> None:
        """Make `next` return TICK once the events queued so far are read (a timer's call)."""
        self._subscription.queue.put_nowait(TICK)

    def drop(self) -> None:
        """Cut the stream as a failing network would."""
        self.dropped = True
        self._subscription.queue.put_nowait(None)

    def close(self) -> None:
        self._subscription.close()
