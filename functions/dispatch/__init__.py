"""Dispatch Lambda: drains the due-index range a fanned-out tick hands it."""
