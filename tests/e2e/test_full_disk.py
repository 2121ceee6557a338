"""A log directory that fills up mid-run (a tmpfs of its own, filled by the test): Inspect
records the task as errored and its worker exits 0, again at each respawn, until the task
stalls. The decision, the notification, `status` and status.md say "no space left on device"
and what to free, with the last worker's exit and its log's last lines; once the space is
freed and the operator rules `retry`, the run finishes and every sample completed before the
disk filled is in the final log, run once."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.log import read_eval_log_sample_summaries

from harness.helpers import assert_each_sample_once, make_workspace, read_journal, wait_for
from harness.receiver import Receiver
from harness.tmpfs import fill, tmpfs

SAMPLES = 120
# Slow enough (2 at a time, 0.25 s each) that the disk fills with most of the task to run.
DOTENV = "STEWARD_OFFLINE_DELAY=0.25\n"
FIX = "free space there (or move log_dir) and retry the task"


def _completed_in(log_dir: Path) -> set[str]:
    """The uuids of the samples the task's log holds completed, without an error."""
    found: set[str] = set()
    for log in log_dir.glob("*.eval"):
        try:
            found |= {s.uuid for s in read_eval_log_sample_summaries(str(log)) if not s.error}
        except Exception:  # written as we read it: look again
            continue
    return found


def _events(workspace: Path, name: str) -> list[dict]:
    return [e for e in read_journal(workspace) if e["event"] == name]


def test_a_full_log_dir_says_what_to_free_and_loses_nothing(steward, workspace_root):
    with Receiver() as receiver:
        workspace = make_workspace(
            steward,
            workspace_root,
            {"filling": SAMPLES},
            eval_set_args=", max_samples=2",
            tend_interval="1h",  # every tend comes from a worker's exit or a command
            dotenv=DOTENV + f"STEWARD_NOTIFICATION={receiver.url}\n",
        )
        with tmpfs(workspace / "logs", "8m") as logs:
            steward.ok("launch", cwd=workspace)
            before = wait_for(
                lambda: (found := _completed_in(logs)) and len(found) >= 20 and found,
                timeout=180,
                interval=0.5,
                what="20 samples in the task's log",
            )
            filler = fill(logs)

            status = steward.wait_phase(workspace, {"stalled"}, timeout=300)
            cause = f"no space left on device under {logs}: {FIX}"
            [task] = status["state"]["tasks"]
            assert task["phase"] == "stalled" and task["exit_cause"] == cause
            assert "exited with code 0" in task["exit_detail"]  # Inspect returned; it said why
            assert any(
                "[Errno 28] No space left on device" in line for line in task["exit_log_tail"]
            )

            # The decision asks with the cause, the fix, the exit and the log's last lines.
            [decision] = [
                d for d in steward.ok("collect", cwd=workspace)["decisions"]
                if d["kind"] == "stalled_task"
            ]  # fmt: skip
            question = decision["question"]
            assert f"its workers die with {cause}" in question, question
            assert "; the last: worker w" in question and "exited with code 0" in question
            assert "its log ends: " in question and "[Errno 28] No space left on device" in question

            # ... and so do the notification, status and status.md.
            wait_for(
                lambda: "no space left on device" in receiver.text(),
                what="the decision's notification",
                describe=receiver.text,
            )
            assert FIX in receiver.text()
            shown = steward("status", cwd=workspace)
            assert shown.code == 0 and "stalled" in shown.stdout
            assert "no space left on device" in " ".join(shown.stdout.split())
            wait_for(
                lambda: cause in (workspace / "status.md").read_text(),
                what="status.md to name the cause",
            )
            exits = [e for e in _events(workspace, "worker exited") if "cause" in e]
            assert exits and all(e["cause"] == cause for e in exits), exits
            assert _events(workspace, "task stalled")[-1]["cause"] == cause

            # The operator frees the space and retries, as the question says.
            filler.unlink()
            steward.ok("rule", decision["id"], "retry", "--reason", "freed the disk", cwd=workspace)
            steward.wait_phase(workspace, {"finished"}, timeout=300)

            assert_each_sample_once(workspace, {"filling": SAMPLES})
            after = _completed_in(logs)
            assert before <= after, f"lost {len(before - after)} completed sample(s)"
            steward("cancel", "--reason", "the test is done", cwd=workspace)  # ended either way
