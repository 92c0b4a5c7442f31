"""mdns: services announced over multicast DNS (DNS-SD), followed as they come and go."""
