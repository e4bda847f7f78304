"""cfn-lint on the synthesized templates: zero errors."""

from __future__ import annotations

import pytest
from cfnlint.api import ManualArgs, lint
from infra_testing import Synth

REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-2"]
# Warnings we accept, and why: W3005 flags the DependsOn that CDK's Function adds on its role
# next to the GetAtt of the same role (redundant, harmless).
ACCEPTED_WARNINGS = {"W3005"}


@pytest.mark.parametrize("fixture", ["dev", "prod", "api_keys", "with_targets"])
def test_cfn_lint_finds_no_errors(fixture: str, request: pytest.FixtureRequest) -> None:
    # GIVEN the template file `cdk synth` wrote
    synthed: Synth = request.getfixturevalue(fixture)
    text = synthed.template_path.read_text()
    # WHEN linted for several regions
    matches = lint(text, config=ManualArgs(regions=REGIONS))
    # THEN no errors, and no warnings beyond the accepted ones
    errors = [f"{m.rule.id} {m.message}" for m in matches if m.rule.id.startswith("E")]
    assert errors == []
    warnings = [
        f"{m.rule.id} {m.message}"
        for m in matches
        if m.rule.id.startswith("W") and m.rule.id not in ACCEPTED_WARNINGS
    ]
    assert warnings == []
