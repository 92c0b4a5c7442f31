"""Wire protocols spoken over unix sockets: kubelet device plugins, DRA plugins and plugin
registration, PodResources, Akri discovery.

The `.proto` sources live next to the generated modules so imports stay absolute within
`akri.proto`; regenerate with `python -m akri.proto.generate` (`make protos`).
"""
