"""Punctual's AWS infrastructure (CDK, Python): `python -m infra.app` is the CDK app."""
