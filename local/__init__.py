"""The local runtime behind `make run`: moto's server as the embedded AWS, the real handlers
behind a local HTTP API, the tick loop and the SQS pollers."""
