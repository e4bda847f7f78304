"""The API Lambda."""
