"""The tick Lambda."""
