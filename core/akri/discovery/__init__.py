"""The discovery handler SDK: what every handler, the agent and the controller share.

A handler yields `model.Device` lists through the `handler.DiscoveryHandler` protocol and
refuses bad discoveryDetails with `details`; `server` serves it over Akri's `discovery.proto`
and keeps it registered with the agent; `convert` and `endpoints` are that protocol's edges;
`properties` resolves discoveryProperties; and `entry_points` finds the handlers and details
parsers installed with akri-py or beside it.
"""
