"""Temporal's payload limits, met at the edges and never silent: an option grown past what can
travel is refused by every command in one sentence while the live run keeps tending on its
last good options; a launch carrying one creates nothing; an activity result too large for
Temporal stops a tend in words (status, status.md, the journal, a notification) and the next
tend recovers once it is gone.

This module runs its own server and worker: the worker refuses activity results over 100 KB
(STEWARD_ACTIVITY_RESULT_LIMIT), so an ordinary option of 150 KB (under the 256 KB an option
may take) makes the run's re-read of its options too large, as a 2 MB one would."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from harness.helpers import (
    Steward,
    make_workspace,
    own_services,
    read_journal,
    wait_for,
)
from harness.receiver import Receiver

GUARD_LIMIT = 100 * 1024


@pytest.fixture(scope="module")
def steward() -> Steward:
    """This module's own Temporal server and Steward worker (see the module's docstring)."""
    limit = {"STEWARD_ACTIVITY_RESULT_LIMIT": str(GUARD_LIMIT)}
    with own_services("steward-test-payload-", lambda _: limit) as runner:
        yield runner


def _policies(size: int) -> str:
    """A `policies:` block a little over `size` bytes as the option's value travels (JSON: each
    newline two bytes), one line per rule, as someone pasting a rulebook in would write it."""
    rule = "Never rerun a sample whose transcript shows a tool call that was refused."
    return "policies: |\n" + f"  {rule}\n" * (size // (len(rule) + 2) + 1)


def _said(result) -> str:
    return " ".join((result.stdout + result.stderr).split())


def _refusal(options_file: Path, size: str) -> str:
    return (
        rf"Option 'policies' in {re.escape(str(options_file))} is {size}; Steward passes "
        r"options through Temporal, whose payloads stop at 2 MB: keep it under 256 KB \(put "
        r"long policies in a file the agent reads and name the file\)\."
    )


def _live_workspace(steward: Steward, root: Path, receiver: Receiver, tend_interval: str) -> Path:
    """A launched run that keeps running through the test: one sample at a time, half a
    second each."""
    workspace = make_workspace(
        steward,
        root,
        {"slow": 600},
        tend_interval=tend_interval,
        options="heartbeat: false\nsamples_ramp: [1, 1]\n",
        dotenv=f"STEWARD_OFFLINE_DELAY=0.5\nSTEWARD_NOTIFICATION={receiver.url}\n",
    )
    steward.ok("launch", cwd=workspace)
    return workspace


def test_policies_grown_past_the_limit_are_refused_and_the_run_keeps_tending(
    steward, workspace_root
):
    with Receiver() as receiver:
        workspace = _live_workspace(steward, workspace_root, receiver, "2s")
        options_file = (workspace / "_steward.yaml").resolve()
        good = options_file.read_text()
        options_file.write_text(good + _policies(3 * 1024 * 1024))
        refusal = _refusal(options_file, r"3(\.\d)? MB")
        for command in ("status", "tend"):
            refused = steward(command, cwd=workspace, timeout=60)
            assert refused.code == 2, _said(refused)
            assert re.search(refusal, _said(refused)) and "Traceback" not in _said(refused)

        # The run re-reads the file at each tend (every 2 s): it says why it keeps its options.
        def unreadable() -> list[dict]:
            return [e for e in read_journal(workspace) if e["event"] == "options unreadable"]

        wait_for(unreadable, timeout=90, what="the journal's 'options unreadable'")
        assert re.fullmatch(refusal, unreadable()[0]["problem"])
        tends = steward.state(workspace)["tend_count"]
        wait_for(
            lambda: steward.state(workspace)["tend_count"] >= tends + 2,
            timeout=60,
            what="the run to keep tending",
        )
        state = steward.state(workspace)
        assert re.fullmatch(refusal, state["options_problem"]) and state["phase"] == "running"
        wait_for(
            lambda: "Options not applied" in (workspace / "status.md").read_text(),
            timeout=30,
            what="status.md to say so",
        )
        wait_for(
            lambda: (
                "A tend could not run: options unreadable: Option 'policies'" in receiver.text()
            ),
            timeout=60,
            what="the operator told",
        )

        options_file.write_text(good)
        summary = steward.ok("tend", cwd=workspace)
        assert summary["tend"] > tends + 2 and summary["problem"] is None
        status = steward.status(workspace)
        assert status["state"]["options_problem"] is None
        assert len(unreadable()) == 1  # one reason, said once
        assert "Options not applied" not in (workspace / "status.md").read_text()
        steward.ok("cancel", cwd=workspace)


def test_a_launch_carrying_a_10_mb_option_is_refused_and_creates_nothing(steward, workspace_root):
    workspace = make_workspace(steward, workspace_root, {"small": 2})
    options_file = (workspace / "_steward.yaml").resolve()
    options_file.write_text(options_file.read_text() + _policies(10 * 1024 * 1024))
    before = sorted(p.relative_to(workspace) for p in workspace.rglob("*"))
    started = time.monotonic()
    refused = steward("launch", cwd=workspace, timeout=120)
    assert refused.code == 2, _said(refused)
    assert re.search(_refusal(options_file, r"10(\.\d)? MB"), _said(refused))
    assert time.monotonic() - started < 30  # parsed and refused, not sent and timed out
    assert sorted(p.relative_to(workspace) for p in workspace.rglob("*")) == before
    runs = steward.ok("runs", cwd=workspace_root)["runs"]
    assert not [r for r in runs if r["workspace"] == str(workspace.resolve())]


def test_an_activity_result_too_large_stops_the_tend_in_words_and_the_next_recovers(
    steward, workspace_root
):
    with Receiver() as receiver:
        # Tends on commands only: each step below is one tend.
        workspace = _live_workspace(steward, workspace_root, receiver, "1h")
        options_file = workspace / "_steward.yaml"
        good = options_file.read_text()
        done = steward.ok("tend", cwd=workspace)["tend"]
        options_file.write_text(good + _policies(150 * 1024))  # a valid option, < 256 KB
        summary = steward.ok("tend", cwd=workspace)
        problem = summary["problem"]
        assert re.fullmatch(
            r"the tend stopped short: the activity read_ramp_settings returned 1\d\d(\.\d)? KB, "
            r"more than the 100 KB Steward lets one Temporal payload carry \(Temporal stops at "
            r"2 MB\); shrink what made it grow \(a long option, a large definition\) and it is "
            r"tried again at the next tend",
            problem,
        ), problem
        assert summary["tend"] == done + 1  # not counted: it did not finish
        assert steward.status(workspace)["state"]["tend_problem"] == problem
        shown = _said(steward("status", cwd=workspace))
        assert f"last tend stopped short: {problem}" in shown
        assert f"**Last tend stopped short**: {problem}" in (workspace / "status.md").read_text()
        assert [e["problem"] for e in read_journal(workspace) if e["event"] == "tend failed"] == [
            problem
        ]
        wait_for(lambda: f"A tend could not run: {problem}" in receiver.text(), what="a notice")

        options_file.write_text(good)
        summary = steward.ok("tend", cwd=workspace)
        assert summary["problem"] is None and summary["tend"] == done + 1
        state = steward.status(workspace)["state"]
        assert state["tend_problem"] is None and state["tend_count"] == done + 1
        assert "Last tend stopped short" not in (workspace / "status.md").read_text()
        recovered = [e for e in read_journal(workspace) if e["event"] == "tend recovered"]
        assert [e["problem"] for e in recovered] == [problem]
        steward.ok("cancel", cwd=workspace)
