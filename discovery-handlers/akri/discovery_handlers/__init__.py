"""Discovery handlers, runnable embedded in the agent or as external gRPC handlers."""
