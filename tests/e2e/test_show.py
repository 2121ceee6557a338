"""`steward show SAMPLE` on a real run: a sample the offline model failed, named as `collect`
names a decision's instance, shows its error, traceback tail and transcript tail (people and
--json alike); a sample or task the run does not have is refused in one sentence listing what
it has (exit 2); a deferral is refused on a verdict that cannot wait."""

from __future__ import annotations

from harness.helpers import make_workspace

JSON_KEYS = {
    "ok", "task", "model", "identifier", "sample_id", "epoch", "epochs", "uuid", "log",
    "log_status", "newest_log", "status", "error", "retries", "scores", "messages_total",
    "transcript_tail",
}  # fmt: skip


def test_show_prints_an_errored_samples_error_and_transcript_tail(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"chat": 3},
        tend_interval="1h",
        dotenv="STEWARD_OFFLINE_FAIL=chat-2$\n",
    )
    steward.ok("launch", cwd=workspace)
    steward.wait_phase(workspace, {"finished"}, tend=True)
    (decision,) = steward.ok("collect", "--since", "0", cwd=workspace)["decisions"]
    (instance,) = decision["instances"]
    sample = f"{instance['task']}/{instance['sample_id']}@{instance['epoch']}"
    assert sample == "chat/2@1"

    shown = steward.ok("show", sample, cwd=workspace)
    assert set(shown) == JSON_KEYS
    assert (shown["task"], shown["sample_id"], shown["epoch"], shown["status"]) == (
        "chat", "2", 1, "error",
    )  # fmt: skip
    assert shown["model"] == "steward/offline" and shown["newest_log"]
    assert instance["detail"][:40] in shown["error"]["message"]
    assert shown["error"]["traceback_tail"] and len(shown["error"]["traceback_tail"]) <= 15
    assert shown["transcript_tail"][0] == {"role": "user", "text": "Reply with: chat-2"}

    healthy = steward.ok("show", "chat/3", "--messages", "1", cwd=workspace)
    assert healthy["status"] == "ok" and healthy["error"] is None
    assert healthy["scores"]["match"]["value"] == "C"
    assert [m["role"] for m in healthy["transcript_tail"]] == ["assistant"]

    person = steward("show", sample, cwd=workspace)
    assert person.code == 0, person.stderr
    assert "chat sample 2 epoch 1: error" in person.stdout
    assert "Reply with: chat-2" in person.stdout and "error:" in person.stdout

    missing = steward("show", "chat/9", "--json", cwd=workspace)
    assert missing.code == 2
    assert (
        "No sample 9 in chat's logs; its newest log holds sample ids 1, 2, 3."
        in (missing.json["error"])
    )
    unknown = steward("show", "nope/1", cwd=workspace)
    assert unknown.code == 2 and "No task 'nope' in this run; its tasks: chat" in unknown.stderr
    assert "Traceback" not in unknown.stderr

    refused = steward(
        "rule", decision["id"], "exclude", "--when-provider-answers", "--json", cwd=workspace
    )
    assert refused.code == 2
    assert "--when-provider-answers defers a rerun only" in refused.json["error"]
    steward.ok("cancel", "--reason", "done", cwd=workspace)
