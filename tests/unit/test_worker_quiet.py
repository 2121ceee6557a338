"""What the worker's process leaves in its log and the fast tier's warnings: no deprecated
tenacity argument in the offline model's backoff, no ANSI colour codes from Temporal's core in
a log file."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

from steward.worker.offline_model import OfflineModel


def test_the_offline_models_backoff_raises_no_deprecation_warning():
    model = OfflineModel("offline/test")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a DeprecationWarning fails the test
        wait = model.retry_wait()
    assert wait.multiplier == 0.05 and wait.max == 0.5  # still the fast backoff


# Core logs at DEBUG when a client connects (to a port nobody listens on): a real core line.
CONNECT_WITH_CORE_LOGS = textwrap.dedent(
    """
    import asyncio, logging, sys
    from temporalio.client import Client
    from temporalio.runtime import TelemetryFilter
    from steward.worker.log_setup import configure_worker_logging

    configure_worker_logging(sys.stdout, TelemetryFilter(core_level="DEBUG", other_level="DEBUG"))
    logging.getLogger("temporalio.core").setLevel(logging.DEBUG)  # the worker keeps INFO

    async def main():
        try:
            await Client.connect("127.0.0.1:1")
        except RuntimeError:
            pass
        await asyncio.sleep(0.5)  # forwarded core lines are buffered for a few milliseconds

    asyncio.run(main())
    """
)


def test_the_worker_log_is_plain_text_with_temporals_core_lines_in_it(tmp_path):
    log = tmp_path / "worker.log"
    with log.open("w") as out:  # a file, as the detached worker's and the service's log are
        subprocess.run(
            [sys.executable, "-c", CONNECT_WITH_CORE_LOGS],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=60,
            check=True,
        )
    text = log.read_text()
    assert "temporalio.core" in text and "connecting to 127.0.0.1:1" in text, text
    assert "\x1b[" not in text, text
