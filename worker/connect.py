"""Where Steward's Temporal lives and how to reach it."""

from __future__ import annotations

import hashlib
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from platformdirs import user_data_path

from steward.workflows.names import WorkflowType
from steward.workflows.options import StewardOptions
from steward.workflows.views import web_ui


def data_dir() -> Path:
    """Steward's machine-wide data directory (STEWARD_DATA_DIR overrides platformdirs)."""
    path = Path(os.environ.get("STEWARD_DATA_DIR") or user_data_path("steward"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def host_id() -> str:
    """This host's name among hosts: STEWARD_HOST_ID, else the machine's name."""
    return os.environ.get("STEWARD_HOST_ID") or socket.gethostname()


def host_queue() -> str:
    """The task queue for activities that touch this host's processes and files."""
    scope = hashlib.sha256(str(data_dir().resolve()).encode()).hexdigest()[:8]
    return f"steward-host-{host_id()}-{scope}"


CONNECT_SECONDS = 15.0  # how long a command waits for Temporal to answer a connection


class ConnectError(Exception):
    """Temporal cannot be reached as configured; the message says why."""


def connect_failure(err: BaseException, seconds: float) -> str:
    """Why connecting to Temporal failed, in a few words. A wait that ran out is `timed out`
    (its message is empty: it used to read "()"); the SDK's transport error is cut down to the
    OS's own words ("Connection refused") when it carries them."""
    if isinstance(err, TimeoutError):
        return f"timed out: nothing answered within {seconds:g} s"
    text = " ".join(str(err).split())
    said = re.search(r'message: "([^"]+)"', text)
    return said.group(1) if said else text or type(err).__name__


@dataclass(frozen=True)
class Target:
    address: str
    namespace: str
    embedded: bool
    ui_url: str | None
    tls_cert: str | None = None
    tls_key: str | None = None
    api_key: str | None = None


def target_for(options: StewardOptions) -> Target:
    if options.temporal_address:
        return Target(
            address=options.temporal_address,
            namespace=options.temporal_namespace,
            embedded=False,
            ui_url=None,
            tls_cert=options.temporal_tls_cert,
            tls_key=options.temporal_tls_key,
            api_key=options.temporal_api_key,
        )
    return Target(
        address=f"127.0.0.1:{options.temporal_port}",
        namespace=options.temporal_namespace,
        embedded=True,
        ui_url=f"http://127.0.0.1:{options.temporal_ui_port}",
    )


def run_url(target: Target, workflow_id: str, run_id: str | None = None) -> str | None:
    """The run's page in the Temporal web UI; given the execution's run id, on its *User
    Metadata* tab, where Steward's view of the run is (workflows/views/web_ui.py). Without it
    the UI opens the latest execution's timeline (a run continues as new under new run ids)."""
    if target.ui_url is None:
        return None
    page = f"{target.ui_url}/namespaces/{target.namespace}/workflows/{workflow_id}"
    return web_ui.page_url(page, run_id) if run_id else page


# Runs only: the other workflows (ledgers, registries, checks) and the executions a run
# continued from are left out. The UI takes a visibility query as `?query=`.
RUNS_QUERY = f'WorkflowType="{WorkflowType.EVAL_RUN}" AND ExecutionStatus!="ContinuedAsNew"'


def runs_url(target: Target) -> str | None:
    """The web UI's workflow list showing Steward's runs only, one row per run."""
    if target.ui_url is None:
        return None
    query = quote(RUNS_QUERY, safe='="!')
    return f"{target.ui_url}/namespaces/{target.namespace}/workflows?query={query}"


async def connect(target: Target):
    """A Temporal client speaking pydantic."""
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.service import TLSConfig

    for option, path in (
        ("temporal_tls_cert", target.tls_cert),
        ("temporal_tls_key", target.tls_key),
    ):
        if path and not Path(path).is_file():
            raise ConnectError(
                f"{option} (STEWARD_{option.upper()}) names {path}, which does not exist; "
                "point it at the PEM file."
            )
    tls: TLSConfig | bool = False
    if target.tls_cert or target.tls_key:
        tls = TLSConfig(
            client_cert=Path(target.tls_cert).read_bytes() if target.tls_cert else None,
            client_private_key=Path(target.tls_key).read_bytes() if target.tls_key else None,
        )
    elif target.api_key:
        tls = True
    return await Client.connect(
        target.address,
        namespace=target.namespace,
        tls=tls,
        api_key=target.api_key,
        data_converter=pydantic_data_converter,
    )
