"""The REST API: one Lambda proxy under /v1, AWS_IAM (SigV4) authorization by default or API
keys with one usage plan per tenant, stage throttling, JSON access logs, execution logs at
ERROR and X-Ray."""

from __future__ import annotations

import json

from aws_cdk import CfnOutput, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import EnvironmentConfig
from infra.constructs.function import retention_days
from infra.nag import acknowledge

BASE_PATH = "v1"

# What every access log line records: who called (IAM identity or API key id, which is what
# the tenant is derived from), what, and how it went.
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "extendedRequestId": "$context.extendedRequestId",
    "requestTime": "$context.requestTime",
    "sourceIp": "$context.identity.sourceIp",
    "caller": "$context.identity.caller",
    "userArn": "$context.identity.userArn",
    "accountId": "$context.identity.accountId",
    "apiKeyId": "$context.identity.apiKeyId",
    "httpMethod": "$context.httpMethod",
    "path": "$context.path",
    "resourcePath": "$context.resourcePath",
    "protocol": "$context.protocol",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "integrationStatus": "$context.integration.status",
    "errorMessage": "$context.error.message",
    "xrayTraceId": "$context.xrayTraceId",
}


class PunctualApi(Construct):
    """API Gateway REST API in front of the api function."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: EnvironmentConfig,
        handler: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        api_config = config.api
        removal = RemovalPolicy.DESTROY if config.destroy_on_delete else RemovalPolicy.RETAIN
        use_keys = api_config.auth == "api_key"

        self.access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=retention_days(config.log_retention_days),
            removal_policy=removal,
        )
        self.rest_api = apigw.RestApi(
            self,
            "Api",
            rest_api_name=f"punctual-{config.name}",
            description=f"Punctual scheduler API ({config.name})",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=api_config.create_cloudwatch_role,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            api_key_source_type=apigw.ApiKeySourceType.HEADER if use_keys else None,
            deploy_options=apigw.StageOptions(
                stage_name=config.name,
                throttling_rate_limit=api_config.throttle_rate_limit,
                throttling_burst_limit=api_config.throttle_burst_limit,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS)),
                # Execution logs at ERROR only: request and response bodies (job payloads)
                # never reach the logs.
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                metrics_enabled=True,
                tracing_enabled=config.tracing,
            ),
        )
        # Parameters and (where a model is set) bodies are checked before the function runs;
        # the function validates every body itself as well.
        validator = self.rest_api.add_request_validator(
            "Validator",
            request_validator_name=f"punctual-{config.name}",
            validate_request_body=True,
            validate_request_parameters=True,
        )
        integration = apigw.LambdaIntegration(handler, proxy=True, allow_test_invoke=False)
        proxy = self.rest_api.root.add_resource(BASE_PATH).add_resource("{proxy+}")
        self.method = proxy.add_method(
            "ANY",
            integration,
            authorization_type=(
                apigw.AuthorizationType.NONE if use_keys else apigw.AuthorizationType.IAM
            ),
            api_key_required=use_keys,
            request_validator=validator,
        )

        self.api_key_ids: dict[str, str] = {}
        if use_keys:
            self._usage_plans(config)

        self._acknowledge(config)
        self.url = self.rest_api.url_for_path(f"/{BASE_PATH}")

    def _usage_plans(self, config: EnvironmentConfig) -> None:
        api_config = config.api
        quota = (
            apigw.QuotaSettings(limit=api_config.tenant_requests_per_day, period=apigw.Period.DAY)
            if api_config.tenant_requests_per_day
            else None
        )
        for tenant in api_config.api_key_tenants:
            # API Gateway generates the key value: no secret is written into the template.
            key = apigw.ApiKey(
                self,
                f"Key-{tenant}",
                api_key_name=f"punctual-{config.name}-{tenant}",
                description=f"Punctual tenant {tenant} ({config.name})",
            )
            plan = apigw.UsagePlan(
                self,
                f"Plan-{tenant}",
                name=f"punctual-{config.name}-{tenant}",
                throttle=apigw.ThrottleSettings(
                    rate_limit=api_config.tenant_rate_limit,
                    burst_limit=api_config.tenant_burst_limit,
                ),
                quota=quota,
                api_stages=[
                    apigw.UsagePlanPerApiStage(
                        api=self.rest_api, stage=self.rest_api.deployment_stage
                    )
                ],
            )
            plan.add_api_key(key)
            self.api_key_ids[tenant] = key.key_id
            CfnOutput(
                self,
                f"KeyId-{tenant}",
                value=key.key_id,
                description=f"API key id of tenant {tenant}; its tenant id is apikey:<this id>",
            )

    def _acknowledge(self, config: EnvironmentConfig) -> None:
        acknowledge(
            self.rest_api,
            "AwsSolutions-APIG3",
            "No WAF web ACL: every request must be SigV4-signed (or carry an API key), the stage "
            "and usage plans throttle, and the function enforces per-tenant quotas. Attach a "
            "regional web ACL outside this stack where IP-based rules are wanted.",
        )
        acknowledge(
            self.rest_api,
            "AwsSolutions-COG4",
            "Callers are AWS principals authenticated by IAM (AWS_IAM authorization, SigV4) or "
            "API keys per tenant, by design; Punctual has no Cognito user pool.",
        )
        if config.api.auth == "api_key":
            acknowledge(
                self.rest_api,
                "AwsSolutions-APIG4",
                "API-key mode (opt-in per environment): the method requires an API key bound "
                "to one tenant's usage plan, and the tenant is derived from the key id.",
            )
        if config.api.create_cloudwatch_role:
            acknowledge(
                self.rest_api,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs]",
                "The account-level role API Gateway needs to write access and execution logs; "
                "AWS documents this managed policy for it and only apigateway.amazonaws.com "
                "can assume the role.",
            )
