"""The pod network's addresses: each node its /24, its gateway first, pods the rest."""

from __future__ import annotations

import pytest

from akri.sim.podnet.addresses import MAX_NODES, NodeNetwork, veth_name


def test_each_node_has_its_own_slash_24_with_the_gateway_first() -> None:
    assert [str(NodeNetwork(i).cidr) for i in (0, 1, 255)] == [
        "10.244.0.0/24",
        "10.244.1.0/24",
        "10.244.255.0/24",
    ]
    assert NodeNetwork(1).gateway == "10.244.1.1"
    with pytest.raises(ValueError, match="room for 256 nodes"):
        NodeNetwork(MAX_NODES)


def test_addresses_are_handed_out_once_and_reused_after_release() -> None:
    node = NodeNetwork(3)
    given = [node.allocate() for _ in range(253)]
    assert given[0] == "10.244.3.2"
    assert given[-1] == "10.244.3.254"
    assert len(set(given)) == 253
    with pytest.raises(RuntimeError, match=r"no free pod address in 10\.244\.3\.0/24"):
        node.allocate()
    node.release("10.244.3.77")
    assert node.allocate() == "10.244.3.77"


def test_a_released_address_is_not_the_next_one_given() -> None:
    node = NodeNetwork(0)
    first, second = node.allocate(), node.allocate()
    node.release(first)
    assert (first, second, node.allocate()) == ("10.244.0.2", "10.244.0.3", "10.244.0.4")


def test_veth_names_are_unique_per_address_and_short_enough_for_the_kernel() -> None:
    names = {veth_name(f"10.244.{n}.{h}") for n in range(256) for h in range(2, 255)}
    assert len(names) == 256 * 253
    assert max(len(name) for name in names) <= 15
