"""The soak's user: its edits must reach the API, through injected faults, or fail at once."""

from __future__ import annotations

from kubernetes_asyncio import client

from akri import naming
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from akri.sim.manifests import debug_echo_configuration
from akri.sim.soak.user import NAMESPACE, User


async def capacity(api: client.ApiClient) -> int:
    found = await client.CustomObjectsApi(api).get_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "configurations", "cam"
    )
    return int(found["spec"]["capacity"])


async def test_a_capacity_edit_goes_through_transient_faults(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    """The soak's capacity events once sent a JSON patch body as a merge patch: every edit
    was refused (400) and retried for a minute, so capacity never changed in a soak."""
    user = User(api)
    assert await user.create("configurations", debug_echo_configuration("cam", ["a"], 2))
    throttled = apiserver.faults.add(FaultRule(verb="patch", status=429, count=2))

    assert await user.set_capacity("cam", 3)

    assert throttled.hits == 2
    assert await capacity(api) == 3


async def test_a_request_refused_for_good_is_given_up_at_once(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    user = User(api)
    assert await user.create("configurations", debug_echo_configuration("cam", ["a"], 2))
    refused = apiserver.faults.add(FaultRule(verb="patch", status=400))

    assert not await user.set_capacity("cam", 3)

    assert refused.hits == 1
    assert await capacity(api) == 2
