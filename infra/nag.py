"""cdk-nag (AwsSolutions) for the app, and the one way to acknowledge a finding: with a written
reason next to the resource it concerns."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

# A reason must say why, not only that: tests hold every acknowledgment to this length.
MIN_REASON_LENGTH = 40


def add_checks(app: IConstruct) -> None:
    """Run the AwsSolutions pack at synth: any finding not acknowledged fails the synth."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding (e.g. `AwsSolutions-IAM5[Resource::*]`) on `scope` and
    everything under it."""
    if len(reason) < MIN_REASON_LENGTH:
        raise ValueError(f"the reason for {rule_id} is too short to justify it")
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
