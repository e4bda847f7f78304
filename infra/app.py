"""The CDK app: one stack for the environment named by the `env` context (default `dev`).

    cdk synth -c env=dev            (what `make synth ENV=dev` runs)
    cdk deploy -c env=prod          (what `make deploy ENV=prod` runs)

Synthesis makes no AWS call: the stack is environment-agnostic unless the environment's config
names an account and region, and nothing is looked up.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import App

from infra.asset import LambdaAsset, build_asset
from infra.config import load_config
from infra.nag import add_checks
from infra.stack import PunctualStack

DEFAULT_ENV = "dev"


def _overrides(app: App, env: str) -> dict[str, Any] | str | None:
    overrides: dict[str, Any] | str | None = app.node.try_get_context(f"punctual:{env}")
    email = app.node.try_get_context("alarm_email")
    if email:
        # Shorthand for the most common override: -c alarm_email=ops@example.com
        config = load_config(env, overrides).model_dump(mode="json")
        config["alarms"]["email"] = email
        return config
    return overrides


def build_app(
    context: dict[str, Any] | None = None,
    outdir: str | None = None,
    asset: LambdaAsset | None = None,
) -> tuple[App, PunctualStack]:
    """Build the app and its one stack, with cdk-nag's AwsSolutions checks registered."""
    app = App(context=context, outdir=outdir)
    env = str(app.node.try_get_context("env") or DEFAULT_ENV)
    config = load_config(env, _overrides(app, env))
    stack = PunctualStack(app, config=config, asset=asset or build_asset())
    add_checks(app)
    return app, stack


def main() -> None:
    """Entry point of `cdk.json`'s app command."""
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
