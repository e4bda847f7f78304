"""Code shared by every Punctual Lambda: models, schedules, services, storage and targets."""
