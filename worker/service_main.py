"""The embedded server and the Steward worker in the foreground, as a service manager (systemd,
launchd) runs them: `python -m steward.worker.service_main temporal|worker`.

Each records its own pid in Steward's data directory first, as `steward server start` and
`steward worker start` do for the detached ones, so `steward` commands find them running and
start nothing beside them, and `steward stop` stops them (a clean stop: the manager, which
restarts on failure only, leaves them stopped until the next login or `service install`).
The server is exec'd in place: the manager watches the dev server's own process.
"""

from __future__ import annotations

import asyncio
import os
import sys

from steward.worker import embedded
from steward.worker.connect import data_dir, target_for


def main(which: str) -> None:
    from steward.activities.workspace.options import load_options

    options = load_options(data_dir())  # the environment the unit sets (no workspace here)
    target = target_for(options)
    if which == "temporal":
        command = embedded.server_command(target, options.temporal_ui_port)
        embedded.write_pid(
            "temporal", os.getpid(), address=target.address, ui_port=options.temporal_ui_port
        )
        os.execv(command[0], command)
    if which == "worker":
        from steward.worker.log_setup import configure_worker_logging
        from steward.worker.metrics import MetricsError
        from steward.worker.temporal_worker import serve

        embedded.write_pid("worker", os.getpid())
        try:
            configure_worker_logging(metrics_port=options.metrics_port)
        except MetricsError as err:
            (data_dir() / "worker.pid").unlink(missing_ok=True)
            raise SystemExit(str(err)) from None
        try:
            asyncio.run(serve(target, embedded.worker_ready_marker()))
        finally:
            (data_dir() / "worker.pid").unlink(missing_ok=True)
        # A clean stop exits 0 without interpreter teardown, where Temporal's runtime can abort
        # the process (sdk-python#300): a manager restarting on failure would restart it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    raise SystemExit(f"usage: python -m steward.worker.service_main temporal|worker (not {which!r})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
