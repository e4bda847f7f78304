"""Synthesizes the CDK app the way `cdk synth` does (cdk.json's context, cdk-nag registered),
once per configuration and test process, and reads the results."""

from __future__ import annotations

import atexit
import io
import json
import os
import shutil
import tempfile
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Before aws_cdk is imported: the machine's Node 20 is past its end of life for jsii.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import boto3
from aws_cdk import App, Validations, assertions

from infra.app import build_app
from infra.asset import build_asset

__all__ = ["build_asset"]
from infra.stack import PunctualStack
from shared.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"


@dataclass
class Synth:
    """One synthesized environment."""

    app: App
    stack: PunctualStack
    outdir: Path
    template_json: dict[str, Any]

    @property
    def template(self) -> assertions.Template:
        """CDK assertions over the synthesized template."""
        return assertions.Template.from_json(self.template_json)

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        """Logical id -> resource, for one resource type."""
        return {
            k: v for k, v in self.template_json["Resources"].items() if v["Type"] == resource_type
        }

    def logical_id(self, construct: Any) -> str:
        """Logical id of an L2 construct's CloudFormation resource."""
        return str(self.stack.resolve(construct.node.default_child.logical_id))

    @property
    def template_path(self) -> Path:
        """The template file, as `cdk synth` writes it."""
        return self.outdir / f"{self.stack.stack_name}.template.json"


_cache: dict[str, Synth] = {}
_tmp = Path(tempfile.mkdtemp(prefix="punctual-synth-"))
atexit.register(shutil.rmtree, _tmp, ignore_errors=True)


def cdk_context() -> dict[str, Any]:
    """The context `cdk` passes to the app: cdk.json's."""
    with (ROOT / "cdk.json").open() as fh:
        context: dict[str, Any] = json.load(fh)["context"]
    return context


def synth(env: str = "dev", overrides: dict[str, Any] | None = None) -> Synth:
    """Synthesize `env` with `overrides` (cached per process). Raises if cdk-nag finds anything
    not acknowledged, exactly as `cdk synth` fails."""
    key = json.dumps([env, overrides], sort_keys=True)
    if key not in _cache:
        context = cdk_context()
        context["env"] = env
        if overrides is not None:
            context[f"punctual:{env}"] = json.dumps(overrides)
        # The asset folder is read in place: no 60 MB copy into every test's cloud assembly.
        context["aws:cdk:disable-asset-staging"] = True
        outdir = _tmp / f"out-{len(_cache)}"
        app, stack = build_app(context=context, outdir=str(outdir), asset=build_asset())
        app.synth()
        with (outdir / f"{stack.stack_name}.template.json").open() as fh:
            template_json = json.load(fh)
        _cache[key] = Synth(app, stack, outdir, template_json)
    return _cache[key]


def acknowledgments(scope: Any) -> list[tuple[str, str, str]]:
    """Every cdk-nag acknowledgment in the tree: (construct path, rule id, reason)."""
    key = Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    out: list[tuple[str, str, str]] = []
    for node in scope.node.find_all():
        for entry in node.node.metadata:
            if entry.type == key:
                for rule_id, reason in dict(entry.data).items():
                    # CDK records acknowledgments without a known prefix as annotations.
                    rule = rule_id.removeprefix("Annotation::").removeprefix("annotation::")
                    out.append((node.node.path, rule, str(reason)))
    return out


def load_event(name: str) -> dict[str, Any]:
    """A sample event from events/."""
    with (EVENTS / name).open() as fh:
        event: dict[str, Any] = json.load(fh)
    return event


def refs(node: Any) -> set[str]:
    """Logical ids a template fragment refers to (Ref, Fn::GetAtt)."""
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "Ref" and isinstance(v, str):
                out.add(v)
            elif k == "Fn::GetAtt":
                out.add(v[0] if isinstance(v, list) else str(v).split(".")[0])
            else:
                out |= refs(v)
    elif isinstance(node, list):
        for v in node:
            out |= refs(v)
    return out


def policy_statements(synthed: Synth, role_logical_prefix: str) -> list[dict[str, Any]]:
    """All statements of the IAM policies attached to one function's role."""
    out: list[dict[str, Any]] = []
    for logical_id, resource in synthed.resources("AWS::IAM::Policy").items():
        if logical_id.startswith(role_logical_prefix):
            out.extend(resource["Properties"]["PolicyDocument"]["Statement"])
    return out


# Deploying the synthesized template into moto's CloudFormation (call inside mock_aws).

MOTO_REGION = "us-east-1"
MOTO_ACCOUNT = "123456789012"  # moto's default account
BOOTSTRAP_QUALIFIER = "hnb659fds"
# Resource types moto's CloudFormation cannot create, and what depends on them (the dashboard
# shows the alarms). The template tests check these; the wiring does not involve them.
MOTO_UNSUPPORTED = {"AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard"}


@dataclass
class Deployed:
    """A stack created by moto's CloudFormation, and clients on the same mock."""

    synthed: Synth
    outputs: dict[str, str]
    dropped: set[str]
    physical_ids: dict[str, str]
    dynamodb: Any
    sqs: Any
    lambda_: Any

    def function_env(self, handler: str) -> dict[str, str]:
        """A deployed function's environment, as CloudFormation resolved it."""
        for fn in self.lambda_.list_functions()["Functions"]:
            if fn["Handler"] == handler:
                env: dict[str, str] = fn["Environment"]["Variables"]
                return env
        raise AssertionError(f"no function with handler {handler}")


def _depends_on(resource: dict[str, Any]) -> set[str]:
    value = resource.get("DependsOn", [])
    return {value} if isinstance(value, str) else set(value)


def moto_template(template: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The template without what moto cannot create (and what refers to it)."""
    resources = dict(template["Resources"])
    dropped = {k for k, v in resources.items() if v["Type"] in MOTO_UNSUPPORTED}
    while True:
        more = {
            k
            for k, v in resources.items()
            if k not in dropped and (refs(v) | _depends_on(v)) & dropped
        }
        if not more:
            break
        dropped |= more
    kept = {k: v for k, v in resources.items() if k not in dropped}
    outputs = {k: v for k, v in template.get("Outputs", {}).items() if not refs(v) & dropped}
    return {**template, "Resources": kept, "Outputs": outputs}, dropped


def seed_bootstrap(synthed: Synth) -> None:
    """What `cdk bootstrap` leaves in an account: the version parameter and the asset bucket
    (holding the function code the template points at)."""
    boto3.client("ssm", region_name=MOTO_REGION).put_parameter(
        Name=f"/cdk-bootstrap/{BOOTSTRAP_QUALIFIER}/version", Value="30", Type="String"
    )
    s3 = boto3.client("s3", region_name=MOTO_REGION)
    bucket = f"cdk-{BOOTSTRAP_QUALIFIER}-assets-{MOTO_ACCOUNT}-{MOTO_REGION}"
    s3.create_bucket(Bucket=bucket)
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as zf:
        zf.writestr("functions/__init__.py", "")
    assets = json.loads((synthed.outdir / f"{synthed.stack.stack_name}.assets.json").read_text())
    for asset in assets["files"].values():
        for destination in asset["destinations"].values():
            s3.put_object(Bucket=bucket, Key=destination["objectKey"], Body=code.getvalue())


def deploy_to_moto(synthed: Synth) -> Deployed:
    """Create the stack with moto's CloudFormation, as `cdk deploy` would in a bootstrapped
    account."""
    seed_bootstrap(synthed)
    template, dropped = moto_template(synthed.template_json)
    cfn = boto3.client("cloudformation", region_name=MOTO_REGION)
    name = synthed.stack.stack_name
    with warnings.catch_warnings():
        # moto warns for each type it skips (queue and topic policies, the API stage, ...).
        warnings.simplefilter("ignore")
        cfn.create_stack(
            StackName=name,
            TemplateBody=json.dumps(template),
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
        )
        stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
        summaries = cfn.list_stack_resources(StackName=name)["StackResourceSummaries"]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    lambda_ = boto3.client("lambda", region_name=MOTO_REGION)
    # moto would run the worker for each message sent, in Docker (not here): the tests call the
    # worker themselves, so the mappings are switched off once created.
    for mapping in lambda_.list_event_source_mappings()["EventSourceMappings"]:
        lambda_.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    return Deployed(
        synthed=synthed,
        outputs={o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])},
        dropped=dropped,
        physical_ids={s["LogicalResourceId"]: s.get("PhysicalResourceId", "") for s in summaries},
        dynamodb=boto3.client("dynamodb", region_name=MOTO_REGION),
        sqs=boto3.client("sqs", region_name=MOTO_REGION),
        lambda_=lambda_,
    )


def settings_from_env(env: dict[str, str]) -> Settings:
    """The Settings a function builds from its environment."""
    fields = {
        k.removeprefix("PUNCTUAL_").lower(): v for k, v in env.items() if k.startswith("PUNCTUAL_")
    }
    # Every PUNCTUAL_ variable the stack sets is one the code reads (no typo is ignored).
    unknown = set(fields) - set(Settings.model_fields)
    assert not unknown, unknown
    return Settings(**fields)
