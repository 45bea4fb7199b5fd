"""Pulumi ComponentResources, one per file, and the adapter that reads the stack config from Pulumi."""
