"""An in-process Kubernetes API server emulator for tests and `akri sim`.

It serves the parts of the Kubernetes API the agent, the controller and kubectl use, over plain
HTTP, from memory, with the semantics they depend on: resourceVersion and 409 on stale writes,
watches that resume or answer 410, label and field selectors, the status subresource,
generation, finalizers, garbage collection, CRDs with schemas and printer columns.

    async with ApiServer() as server:           # port 0: a free port is picked
        server.write_kubeconfig(path)           # context "akri-sim"
        await server.apply_definitions(crd_documents)  # CustomResourceDefinitions
        server.faults.add(verb="patch", resource="instances", status=409, count=1)

Admin API (JSON, outside the Kubernetes API; `server.faults` is the same object in Python):

- `GET    /_sim/faults`               rules, `paused`, `held` requests, open `watches`
- `POST   /_sim/faults`               add a rule; body: any of `verb` (get, list, watch, create,
  update, patch, delete, deletecollection), `resource` (plural, kind, `plural.group`, or
  `plural/subresource`), `namespace`, `name`, `status` (400, 403, 404, 409, 410, 429, 500,
  503, 504), `delay` (seconds), `count` (times it fires; absent = always), `probability`
  (0..1), `message`, `hold` (true: a request it fires on waits until the rule is removed);
  answers 201 with the rule and its `id`. A 410 on a watch arrives as an
  ERROR event in the stream, as a real server sends it; a 429 carries Retry-After.
- `DELETE /_sim/faults/<id>`          remove one rule
- `DELETE /_sim/faults`               remove every rule and resume
- `POST   /_sim/faults/pause`         hold every API request and watch event until resumed
- `POST   /_sim/faults/resume`
- `POST   /_sim/faults/drop-watches`  abort open watch connections; optional body
  `{"resource": ..., "namespace": ...}`; answers `{"dropped": n}`

Known differences from a real server: no authentication, authorization or admission webhooks;
no protobuf or YAML responses; pods are deleted at once (no graceful termination) and nothing
runs them; no field ownership (server-side apply is a merge); built-in kinds are not validated
against their OpenAPI schemas (unknown fields are kept); CRD schemas are checked for type,
required, enum, bounds, pattern, lengths and combinators, not CEL rules or formats; no
/openapi documents, no aggregated discovery, no dry-run.
"""

from akri.sim.apiserver.faults import FaultRule, Faults
from akri.sim.apiserver.server import ApiServer

__all__ = ["ApiServer", "FaultRule", "Faults"]
