"""The worker Lambda."""
