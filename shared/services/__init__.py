"""Use cases. Each takes its dependencies (stores, queue, clock, settings) explicitly."""
