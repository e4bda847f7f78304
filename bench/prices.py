"""On-demand prices (us-east-1) and the billing rules the benchmark applies, in one place.

PRICES ARE NOT FETCHED. They are the public list prices as known to the author of this file
(the AWS pricing pages as they stood in 2025); this file was written on 2026-11-22 on a machine
without network access. Re-check every figure against the pages named in `SOURCES` before
quoting a dollar amount; the units (requests, write/read units, GB-seconds) do not depend on
them and are the figures to trust.
"""

from __future__ import annotations

from typing import Final

PRICES_AS_OF: Final = (
    "prices as of 2025 (author's knowledge of the AWS pricing pages; not re-fetched on "
    "2026-11-22, no network) - re-check before quoting"
)
REGION: Final = "us-east-1"

SOURCES: Final = {
    "dynamodb": "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    "sqs": "https://aws.amazon.com/sqs/pricing/",
    "lambda": "https://aws.amazon.com/lambda/pricing/",
    "api_gateway": "https://aws.amazon.com/api-gateway/pricing/",
    "cloudwatch": "https://aws.amazon.com/cloudwatch/pricing/",
    "scheduler": "https://aws.amazon.com/eventbridge/pricing/ (EventBridge Scheduler)",
    "item_size": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
    "CapacityUnitCalculations.html",
    "read_write_units": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
    "read-write-operations.html",
    "gsi_writes": "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
    "GSI.html#GSI.ThroughputConsiderations",
    "sqs_requests": "https://aws.amazon.com/sqs/pricing/ (each 64 KB chunk is one request)",
}

# ---- prices (USD) ------------------------------------------------------------------------
# DynamoDB on-demand, Standard table class (after the November 2024 reduction).
DYNAMODB_WRITE_UNIT: Final = 0.625 / 1_000_000
DYNAMODB_READ_UNIT: Final = 0.125 / 1_000_000
# SQS standard queue, after the first million requests of the month.
SQS_REQUEST: Final = 0.40 / 1_000_000
# Lambda, x86 (arm64 is ~20 % less per GB-second).
LAMBDA_REQUEST: Final = 0.20 / 1_000_000
LAMBDA_GB_SECOND_X86: Final = 0.0000166667
LAMBDA_GB_SECOND_ARM: Final = 0.0000133334
# API Gateway REST API, first 333 million requests of the month.
API_GATEWAY_REST_REQUEST: Final = 3.50 / 1_000_000
# CloudWatch Logs ingestion (standard class), per GB.
CLOUDWATCH_LOGS_GB: Final = 0.50
# The anchor: EventBridge Scheduler, per scheduled invocation after the 14 million free a month
# (one-minute precision at best).
EVENTBRIDGE_SCHEDULER_INVOCATION: Final = 1.00 / 1_000_000

# ---- billing rules -----------------------------------------------------------------------
# DynamoDB (on-demand bills "request units"; the sizes are the ones provisioned capacity uses):
# - item size = sum over attributes of len(utf-8 name) + value size: S = utf-8 bytes,
#   N = (significant digits + 1) // 2 + 1 bytes, B = raw bytes, BOOL/NULL = 1 byte,
#   L/M = 3 bytes + per element (1 byte + element size, + key name for M), sets = sum of the
#   elements.
# - a write = ceil(size / 1 KB) units, at least 1; PutItem/UpdateItem bill the larger of the
#   item before and after, DeleteItem the deleted item. A write whose condition fails still
#   bills (the size of the item as it stands, at least 1).
# - a transactional write bills twice (TransactWriteItems: each item, 2 x its units). GSI
#   maintenance triggered by a transaction is billed at the standard rate (assumption).
# - each GSI whose keys or projected attributes change bills writes of the index entry's size
#   (our indexes project ALL, so the entry is the item): entry appears = 1 put, disappears =
#   1 delete, key changes = delete + put (2), other projected attribute changes = 1 update.
# - a read = ceil(size / 4 KB) units, at least 1; eventually consistent x 0.5; transactional x 2.
#   GetItem: the item's size (a missing item still bills the minimum). Query: the summed size of
#   the items it evaluates, rounded up once per request (at least the minimum). BatchGetItem:
#   each item rounded up on its own. GSI queries are always eventually consistent.
WRITE_UNIT_BYTES: Final = 1024
READ_UNIT_BYTES: Final = 4096
EVENTUAL_READ_FACTOR: Final = 0.5
TRANSACTION_FACTOR: Final = 2
# SQS: every API request is billed; a request carrying (or returning) more than 64 KB is billed
# once per 64 KB chunk. SendMessageBatch is one request per 64 KB of the batch's payload.
SQS_CHUNK_BYTES: Final = 64 * 1024
# Lambda: one request per invocation; duration is rounded up to the millisecond and billed by
# memory x time (the functions' memory: infra/config.py, read by bench/model.py deployed()).
# The stack deploys arm64 (Graviton): LAMBDA_GB_SECOND_ARM applies.
# Lambda allocates CPU in proportion to memory: 1,769 MB is one full vCPU.
LAMBDA_MB_PER_VCPU: Final = 1769
# Each invocation writes START, END and REPORT platform lines to CloudWatch Logs (~ bytes).
LAMBDA_PLATFORM_LOG_BYTES: Final = 330
# Assumed in-region round trip of one DynamoDB or SQS request from Lambda (p50, ms), used only
# to turn request counts into billed Lambda duration.
AWS_ROUND_TRIP_MS: Final = 6.0
