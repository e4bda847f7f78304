"""cdk-nag (AwsSolutions) runs in every synth, passes, and every acknowledged finding is one we
wrote down with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import aws_iam as iam
from infra_testing import Synth, acknowledgments, build_asset, cdk_context

from infra.app import build_app
from infra.nag import MIN_REASON_LENGTH

# Every acknowledgment the stack may carry, by rule id (the reasons live next to the resources).
ALLOWED = {
    # X-Ray's two actions have no resource-level permissions.
    "AwsSolutions-IAM5[Resource::*]",
    # The runtime is pinned to the Python the asset's wheels are built for.
    "AwsSolutions-L1",
    # No WAF web ACL (SigV4 or API keys, throttling, per-tenant quotas instead).
    "AwsSolutions-APIG3",
    # IAM or API keys, no Cognito.
    "AwsSolutions-COG4",
    # API Gateway's account-level logging role uses the AWS-documented managed policy.
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
    "AmazonAPIGatewayPushToCloudWatchLogs]",
}
# Only in API-key mode: the method is authorized by the key, not by IAM.
API_KEY_ONLY = {"AwsSolutions-APIG4"}


def _violations(synthed: Synth) -> list[str]:
    report = synthed.outdir / "validation-report.json"
    if not report.exists():
        return []
    data = json.loads(report.read_text())
    return [v["ruleName"] for p in data.get("pluginReports", []) for v in p.get("violations", [])]


@pytest.mark.parametrize("fixture", ["dev", "prod", "api_keys", "with_targets"])
def test_nag_passes(fixture: str, request: pytest.FixtureRequest) -> None:
    # GIVEN a configuration / WHEN synthesized (cdk-nag registered, as `cdk synth` does)
    synthed: Synth = request.getfixturevalue(fixture)
    # THEN the synth succeeded and reported nothing
    assert _violations(synthed) == []


@pytest.mark.parametrize("fixture", ["dev", "prod", "api_keys", "with_targets"])
def test_nag_acknowledgments_are_known_and_justified(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    synthed: Synth = request.getfixturevalue(fixture)
    found = acknowledgments(synthed.app)
    assert found
    allowed = set(ALLOWED)
    if synthed.stack.config.api.auth == "api_key":
        allowed |= API_KEY_ONLY
    for arn in synthed.stack.config.targets.model_dump().values():
        allowed |= {f"AwsSolutions-IAM5[Resource::{a}]" for a in arn if "*" in a}
    for path, rule, reason in found:
        assert rule in allowed, f"{path}: unexpected acknowledgment {rule}"
        assert len(reason) >= MIN_REASON_LENGTH, f"{path}: {rule} needs a real reason"
    # Acknowledgments sit on the resources they concern, never on the whole stack or app.
    stack_path = synthed.stack.node.path
    assert all(path.startswith(stack_path + "/") for path, _, _ in found)


def test_nag_fails_the_synth_on_an_unacknowledged_finding(tmp_path: Path) -> None:
    # GIVEN the dev app with a wildcard grant nobody justified
    context = cdk_context() | {"env": "dev", "aws:cdk:disable-asset-staging": True}
    app, stack = build_app(context=context, outdir=str(tmp_path), asset=build_asset())
    stack.api_fn.add_to_policy(iam.PolicyStatement(actions=["s3:*"], resources=["*"]))
    # WHEN synthesized / THEN cdk-nag stops it
    with pytest.raises(RuntimeError, match=r"AwsSolutions-IAM5\[Action::s3:\*\]"):
        app.synth()
