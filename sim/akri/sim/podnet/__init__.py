"""The simulated cluster's pod network: what a CNI plugin gives pods on a real cluster.

The simulator enters a network namespace of its own (`cluster`) holding a bridge; each pod
that is not `hostNetwork` gets a network namespace with one end of a veth pair on the bridge
and an address of its node's pod CIDR (`addresses`, `sandbox`). The API server is reached by
pods at the `kubernetes` Service's address, by the user's kubectl on this machine's loopback.
"""
