"""Repositories over DynamoDB: key builders, item codecs, the one ClientError mapping."""
