"""akri-agent: discovery, Instances, device plugins and slot reclaim for one node."""
