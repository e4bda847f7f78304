"""Start and stop the whole local runtime: moto's server as the embedded AWS, the tables and
queues, the HTTP API, the tick loop and the queue pollers. Usable in-process (tests) as well as
from `python -m local`."""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, TextIO

import boto3
from botocore.config import Config

from local.config import ConfigError, RuntimeConfig
from local.embedded_aws import EmbeddedAws
from local.environment import REGION, prepare_environment
from local.http import HOST, ApiServer, PortInUse, make_api_server, starting
from local.lambdas import LocalLambdas
from local.logs import install_logging
from local.pollers import QueueSource, SqsPollers
from local.ticker import TickLoop
from shared import aws
from shared.constants import PRIORITIES
from shared.services import container
from shared.settings import Settings, get_settings
from shared.storage.schema import create_queues, create_tables, queue_settings_env

__all__ = ["ConfigError", "PortInUse", "Runtime", "RuntimeConfig"]


def local_app_defaults(tick_seconds: float) -> dict[str, str]:
    """The app settings the local runtime defaults differently (the environment still wins).
    The tick runs every few seconds here, not every minute, so a dispatch horizon of a few
    ticks is plenty; and moto's SQS slows down with every message waiting on a queue (its
    sends and receives walk them all), which the deployed 3-minute horizon fills fast:
    rate(1 second) alone would keep 180 delayed messages per job. A message that arrives early
    costs nothing here (a thread waits; on AWS it is billed Lambda time), so the send late
    tolerance is 0: messages arrive up to a second early and the worker starts each run on its
    due millisecond, where the deployed default lets them land up to 250 ms late."""
    return {
        "PUNCTUAL_HORIZON_SECONDS": str(min(840, max(30, math.ceil(3 * tick_seconds)))),
        "PUNCTUAL_DISPATCH_MARGIN_SECONDS": str(min(600, max(15, math.ceil(tick_seconds)))),
        "PUNCTUAL_SEND_LATE_TOLERANCE_MS": "0",
    }


_PREPARED_PREFIXES = ("AWS_", "POWERTOOLS_")


class Runtime:
    """The local runtime. `start()` binds the port first unless given a bound server (a busy
    port fails fast with PortInUse), then brings everything up; `stop()` takes it down in
    reverse order."""

    def __init__(
        self,
        config: RuntimeConfig | None = None,
        out: TextIO | None = None,
        server: ApiServer | None = None,
    ) -> None:
        """`server`: the HTTP server, already bound (make_api_server); else start() binds."""
        self.config = config or RuntimeConfig()
        self._out = out or sys.stdout
        self._http: ApiServer | None = server
        self._http_thread: threading.Thread | None = None
        self._aws: EmbeddedAws | None = None
        self._ticker: TickLoop | None = None
        self._pollers: SqsPollers | None = None
        self._lambdas: LocalLambdas | None = None
        self._undo: list[Callable[[], None]] = []
        self.moto_url = ""
        self.abandoned = 0

    @property
    def url(self) -> str:
        """Base URL of the HTTP API."""
        port = self._http.port if self._http else self.config.port
        return f"http://{HOST}:{port}"

    @property
    def settings(self) -> Settings:
        """The app's settings, as the handlers see them."""
        return get_settings()

    def __enter__(self) -> Runtime:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Bring everything up; on any failure, what was started is stopped again."""
        if self._http is None:
            self._http = make_api_server(HOST, self.config.port)
        self._http.invoke = self._invoke_api
        try:
            self._start_aws()
            self._lambdas = lambdas = LocalLambdas(self.config.concurrency)
            self._undo.append(install_logging(self._out, verbose=self.config.verbose))
            self._pollers = SqsPollers(
                self._admin_sqs(),
                self._queue_sources(get_settings()),
                lambdas.worker,
                concurrency=self.config.concurrency,
                batch_size=self.config.batch_size,
                ready=self._aws.ready if self._aws else None,
            )
            self._pollers.start()
            self._ticker = TickLoop(lambdas.tick, self.config.tick_seconds)
            self._ticker.start()
            self._http_thread = threading.Thread(
                target=self._http.serve_forever,
                kwargs={"poll_interval": 0.2},
                name="local-http",
                daemon=True,
            )
            self._http_thread.start()
        except BaseException:
            self.stop()
            raise

    def _invoke_api(self, event: dict[str, Any]) -> dict[str, Any]:
        return self._lambdas.api(event) if self._lambdas else starting(event)

    def _start_aws(self) -> None:
        saved = {k: v for k, v in os.environ.items() if k.startswith(_PREPARED_PREFIXES)}

        def restore() -> None:
            for name in [n for n in os.environ if n.startswith(_PREPARED_PREFIXES)]:
                del os.environ[name]
            os.environ.update(saved)

        self._undo.append(restore)
        prepare_environment()
        self._aws = EmbeddedAws(HOST)
        self._aws.start()
        self.moto_url = self._aws.url
        defaults = local_app_defaults(self.config.tick_seconds)
        app_env = {k: v for k, v in defaults.items() if not os.environ.get(k)}
        app_env.update(
            {"PUNCTUAL_AWS_ENDPOINT_URL": self.moto_url, "PUNCTUAL_TENANT_SOURCE": "header"}
        )
        self._set_env(app_env)
        self._reset_app()
        settings = Settings()
        admin = aws.AwsClients(settings)
        create_tables(admin.dynamodb, settings)
        urls = create_queues(admin.sqs)
        self._set_env(queue_settings_env(urls))
        self._reset_app()

    def _set_env(self, values: Mapping[str, str]) -> None:
        saved = {name: os.environ.get(name) for name in values}

        def restore() -> None:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

        self._undo.append(restore)
        os.environ.update(values)

    @staticmethod
    def _reset_app() -> None:
        """Make the handlers build settings, clients and services again on first use."""
        get_settings.cache_clear()
        aws.reset_clients()
        container.set_services(None)

    def _admin_sqs(self) -> Any:
        return boto3.client(
            "sqs",
            region_name=get_settings().aws_region,
            endpoint_url=self.moto_url,
            config=Config(retries={"mode": "standard", "max_attempts": 3}, max_pool_connections=16),
        )

    def _queue_sources(self, settings: Settings) -> list[QueueSource]:
        sqs = self._admin_sqs()
        sources = []
        for priority in PRIORITIES:  # high, medium, low: the order they are served in
            url = settings.queue_url(priority)
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
            sources.append(QueueSource(priority, url, arn, settings.aws_region or REGION))
        return sources

    def stop(self) -> None:
        """Stop serving, ticking and polling, then the embedded AWS; idempotent."""
        if self._http is not None:
            if self._http_thread is not None and self._http_thread.is_alive():
                self._http.shutdown()
            self._http.server_close()
            self._http = None
            self._http_thread = None
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        if self._pollers is not None:
            self.abandoned = self._pollers.stop()
            self._pollers = None
        if self._aws is not None:
            self._aws.stop()  # its state goes with its process: a later runtime starts empty
            self._aws = None
        while self._undo:
            self._undo.pop()()
        self._reset_app()
