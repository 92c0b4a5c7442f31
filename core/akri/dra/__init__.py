"""Dynamic Resource Allocation mode (docs/design.md §8a): Instances as DRA devices of driver
`akri.sh`, published in ResourceSlices and selected through one DeviceClass per Configuration.

Pure logic only; the agent, the controller and the simulated scheduler share it.
"""
