"""OPC UA discovery: FindServers on discovery URLs, following discovery servers."""
