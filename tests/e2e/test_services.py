"""The embedded default (server and worker started on demand) and connecting to a cluster."""

from __future__ import annotations

import socket

from harness.helpers import (
    free_port,
    make_workspace,
    pid_alive,
    private_steward,
    wait_for,
)


def _one_sentence(result, code: int, *needles: str) -> None:
    assert result.code == code, (result.stdout, result.stderr)
    text = result.stderr + result.stdout
    assert "Traceback" not in text
    for needle in needles:
        assert needle in text, text


def test_status_of_running_services(steward):
    services = steward.ok("server", "status")["services"]
    assert services[0]["running"] is True and "healthy" in services[0]["detail"]
    assert steward.ok("worker", "status")["services"][0]["running"] is True


def test_port_already_taken(steward, tmp_path):
    private = private_steward(steward, tmp_path)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", int(private.env["STEWARD_TEMPORAL_PORT"])))
        squatter.listen()
        _one_sentence(private("server", "start"), 1, "already taken", "STEWARD_TEMPORAL_PORT")
    assert not (private.data_dir() / "temporal.pid").exists()


def test_binary_missing(steward, tmp_path):
    private = private_steward(steward, tmp_path, STEWARD_TEMPORAL_BIN=str(tmp_path / "no-temporal"))
    _one_sentence(private("server", "start"), 1, "no-temporal", "not an executable file")


def test_server_that_does_not_come_up_within_the_bound(steward, tmp_path):
    fake = tmp_path / "temporal"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    private = private_steward(
        steward, tmp_path, STEWARD_TEMPORAL_BIN=str(fake), STEWARD_SERVER_START_TIMEOUT="2"
    )
    _one_sentence(private("server", "start"), 1, "did not come up within 2 s", "temporal.log")
    assert not (private.data_dir() / "temporal.pid").exists()


def test_commands_start_the_embedded_services_when_needed(steward, tmp_path):
    private = private_steward(steward, tmp_path)
    workspace = make_workspace(private, tmp_path, {"solo": 3})
    launched = private("launch", cwd=workspace)
    assert launched.code == 0, launched.stderr
    assert "Started temporal and worker" in launched.stdout
    assert f"http://127.0.0.1:{private.env['STEWARD_TEMPORAL_UI_PORT']}" in launched.stdout
    server, worker = private.service_pid("temporal"), private.service_pid("worker")
    private.wait_phase(workspace, {"finished"})
    # Already running: nothing new is started.
    again = private("status", cwd=workspace)
    assert again.code == 0 and "Started" not in again.stdout
    assert private.service_pid("temporal") == server and private.service_pid("worker") == worker
    # doctor sees the worker Temporal sees polling both of Steward's queues.
    healthy = private.ok("doctor")
    polled = [c for c in healthy["checks"] if c["name"].startswith("queue ")]
    assert healthy["ok"] and len(polled) == 2
    assert all(c["ok"] and str(worker) in c["detail"] for c in polled), polled
    # `server stop` takes the worker down first: no worker is left polling a dead server.
    stopped = private.ok("server", "stop")
    assert stopped["stopped"] and stopped["worker_stopped"]
    wait_for(lambda: not pid_alive(server) and not pid_alive(worker), what="services to stop")
    status = private("server", "status", "--json")
    assert status.code == 1 and status.json["services"][0]["running"] is False
    assert private.ok("stop")["stopped"] == {"worker": False, "temporal": False}
    sick = private("doctor")
    said = " ".join(sick.stdout.split())  # doctor wraps its lines at the terminal's width
    assert sick.code == 1 and "does not answer" in said
    assert "run `steward server start`" in said


def test_stop_stops_the_worker_then_the_server(steward, tmp_path):
    private = private_steward(steward, tmp_path)
    private.ok("server", "start")
    private.ok("worker", "start")
    server, worker = private.service_pid("temporal"), private.service_pid("worker")
    assert private.ok("stop")["stopped"] == {"worker": True, "temporal": True}
    assert not pid_alive(server) and not pid_alive(worker)
    version = private("--version")
    assert version.code == 0 and version.stdout.startswith("steward ")


def test_a_configured_cluster_is_used_and_nothing_is_started(steward, tmp_path):
    address = f"127.0.0.1:{steward.env['STEWARD_TEMPORAL_PORT']}"
    private = private_steward(steward, tmp_path, STEWARD_TEMPORAL_ADDRESS=address)
    assert isinstance(private.ok("runs")["runs"], list)
    assert not (private.data_dir() / "temporal.pid").exists()
    assert not (private.data_dir() / "worker.pid").exists()
    _one_sentence(private("server", "start"), 2, "STEWARD_TEMPORAL_ADDRESS", address)


def test_unreachable_cluster(steward, tmp_path):
    private = private_steward(
        steward, tmp_path, STEWARD_TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}"
    )
    _one_sentence(private("runs"), 1, "Cannot reach Temporal", "STEWARD_TEMPORAL_ADDRESS")


def test_a_cluster_that_never_answers_says_it_timed_out(steward, tmp_path):
    # A local listener that takes connections (the kernel completes them from the backlog)
    # and never says a word: what a firewall dropping the traffic looks like, off no network.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        private = private_steward(steward, tmp_path, STEWARD_TEMPORAL_ADDRESS=address)
        result = private("runs", timeout=120)
    _one_sentence(
        result,
        1,
        f"Cannot reach Temporal at {address} (timed out: nothing answered within 15 s)",
        "STEWARD_TEMPORAL_ADDRESS",
    )
    assert "()" not in result.stderr


def test_missing_tls_certificate_is_named(steward, tmp_path):
    private = private_steward(
        steward,
        tmp_path,
        STEWARD_TEMPORAL_ADDRESS="127.0.0.1:7233",
        STEWARD_TEMPORAL_TLS_CERT=str(tmp_path / "c.pem"),
    )
    _one_sentence(private("runs"), 2, "temporal_tls_cert", "c.pem", "does not exist")


def test_what_the_service_units_run_is_what_commands_find_and_stop(steward, tmp_path):
    """`python -m steward.worker.service_main temporal|worker` in the foreground, as systemd or launchd
    runs them: they record their pids, so commands use them (start nothing beside them), the
    worker polls, and `steward stop` stops both cleanly (a manager restarting on failure only
    leaves them stopped)."""
    import subprocess
    import sys

    private = private_steward(steward, tmp_path)
    env = {**private.env}
    log = open(tmp_path / "service.log", "ab")
    started: list[subprocess.Popen] = []
    try:
        server = subprocess.Popen(
            [sys.executable, "-m", "steward.worker.service_main", "temporal"],
            env=env,
            stdout=log,
            stderr=log,
        )
        started.append(server)
        wait_for(lambda: private("server", "status").code == 0, timeout=60, what="the server")
        assert private.service_pid("temporal") == server.pid  # exec'd in place: the same process
        worker = subprocess.Popen(
            [sys.executable, "-m", "steward.worker.service_main", "worker"],
            env=env,
            stdout=log,
            stderr=log,
        )
        started.append(worker)
        wait_for(
            lambda: private.ok("doctor")["ok"] if private("doctor").code == 0 else False,
            timeout=90,
            what="the worker to poll",
        )
        assert private.service_pid("worker") == worker.pid
        assert private.ok("worker", "start")["services"][0]["pid"] == worker.pid  # nothing new
        assert private.ok("stop")["stopped"] == {"worker": True, "temporal": True}
        assert worker.wait(30) == 0 and server.wait(30) is not None
    finally:  # what a failed assertion left running must not hold the ports
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()
