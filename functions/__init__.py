"""Lambda handlers: thin translation from AWS events to services."""
