"""`steward wait` on a real run: it times out cleanly (exit 3) while nothing happens, and
returns within seconds of a decision being raised (measured from the journal's time of the
event to the command's exit); `collect --by NAME` remembers the cursor that `collect` and
`wait` of that name start from."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime
from pathlib import Path

from harness.helpers import STEWARD, Steward, make_workspace


def test_wait_times_out_then_wakes_for_a_raised_decision(steward: Steward, workspace_root: Path):
    # Every model call waits while HOLD exists: the run runs, and nothing happens until the test
    # lets it go. Event-driven tends only (a 1h timer).
    hold = workspace_root / "hold"
    hold.write_text("held by the test\n")
    workspace = make_workspace(
        steward,
        workspace_root,
        {"alpha": 4},
        tend_interval="1h",
        dotenv=f"STEWARD_OFFLINE_FAIL=alpha-2\nSTEWARD_OFFLINE_HOLD={hold}\n",
    )
    steward.ok("launch", cwd=workspace)
    try:
        steward.wait_phase(workspace, {"running"})
        first = steward.ok("collect", "--by", "tester", cwd=workspace)
        assert first["by"] == "tester" and first["since"] == 0 and first["decisions"] == []

        # Nothing happens: exit 3 at the timeout, with one sentence (and, with --json, the
        # cursor it got to).
        quiet = steward("wait", "--by", "tester", "--timeout", "2s", cwd=workspace)
        assert quiet.code == 3, quiet.stdout + quiet.stderr
        assert "Nothing happened within 2s" in quiet.stdout and not quiet.stderr
        quiet = steward("wait", "--by", "tester", "--timeout", "2s", "--json", cwd=workspace)
        assert quiet.code == 3
        document = quiet.json
        assert document["timed_out"] and not document["ok"] and document["exit_code"] == 3
        assert document["events"] == [] and document["since"] == first["cursor"]
        bad = steward("wait", "--timeout", "soon", cwd=workspace)
        assert bad.code == 2 and "--timeout 'soon' is not a duration" in bad.stderr

        # A wait in progress wakes when the failed sample's decision is raised.
        waiting = subprocess.Popen(
            [STEWARD, "wait", "--by", "tester", "--timeout", "5m", "--json"],
            cwd=workspace, env=steward.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        time.sleep(4)  # it has started and is looking
        assert waiting.poll() is None, waiting.communicate()
        hold.unlink()
        out, err = waiting.communicate(timeout=300)
        returned = datetime.now().astimezone()
        assert waiting.returncode == 0, out + err
        woke = json.loads(out)
        raised = next(e for e in woke["events"] if e["event"] == "decision raised")
        late = (returned - datetime.fromisoformat(raised["at"])).total_seconds()
        print(f"wait returned {late:.2f} s after the decision was raised")
        assert late < 5, f"wait returned {late:.2f} s after the decision was raised"
        assert raised["owner"] == "agent" and "OfflineSampleFailure" in raised["question"]
        assert woke["cursor"] >= raised["seq"] and not woke["timed_out"]

        # The cursor is tester's: its next collect starts where its last one ended and shows
        # the decision; wait never moved it.
        second = steward.ok("collect", "--by", "tester", cwd=workspace)
        assert second["since"] == first["cursor"]
        assert raised["seq"] in {e["seq"] for e in second["events"]}
        assert raised["decision"] in {d["id"] for d in second["decisions"]}
        third = steward.ok("collect", "--by", "tester", cwd=workspace)
        assert third["since"] == second["cursor"]
        assert all(e["seq"] > second["cursor"] for e in third["events"])
        other = steward.ok("collect", "--by", "someone-else", cwd=workspace)
        assert other["since"] == 0
    finally:
        steward("cancel", "--reason", "test over", cwd=workspace, timeout=120)
