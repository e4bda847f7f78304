"""Pydantic models: domain (job, run), API request/response, SQS message bodies."""
