"""Honest cost on a live run: tokens per model and dollars from a configured price, reserved
capacity-time next to them, and a token cap that pauses the run and asks the operator."""

from __future__ import annotations

from harness.helpers import make_workspace, wait_for


def _open_cap_decision(steward, workspace) -> dict | None:
    decisions = steward.ok("collect", cwd=workspace)["decisions"]
    return next((d for d in decisions if d["kind"] == "cost_cap"), None)


def test_cost_is_shown_and_the_cap_pauses_and_asks(steward, workspace_root):
    workspace = make_workspace(
        steward,
        workspace_root,
        {"priced": 24},
        options=(
            "capacity_backend: docker\nmax_concurrent_sandboxes: 0\n"
            "prices:\n  steward/*:\n    input: 2.0\n    output: 8.0\n"
            "cost_cap:\n  tokens: 40\n"
        ),
        sandbox={"priced": "local"},
        eval_set_args=", max_samples=2",
        dotenv="STEWARD_OFFLINE_DELAY=0.3\n",
    )
    steward.ok("launch", cwd=workspace)
    decision = wait_for(
        lambda: _open_cap_decision(steward, workspace), timeout=180, what="the cost cap decision"
    )
    assert decision["owner"] == "operator" and decision["verdicts"] == ["continue", "cancel"]
    assert "crossed the cap of 40" in decision["question"]
    state = steward.status(workspace)["state"]
    assert state["paused"] and "crossed the cap" in state["pause_reason"]

    agent = steward("rule", decision["id"], "continue", "--agent", "--by", "bot", cwd=workspace)
    assert agent.code == 2 and "operator" in agent.stderr
    steward.ok("rule", decision["id"], "continue", "--by", "norah", cwd=workspace)
    assert not steward.status(workspace)["state"]["paused"]

    finished = steward.wait_phase(workspace, {"finished"}, timeout=240)["state"]
    assert _open_cap_decision(steward, workspace) is None  # continued past this cap: not again
    (model,) = {m for t in finished["tasks"] for m in t["usage"]}
    usage = finished["tasks"][0]["usage"][model]
    assert model == "steward/offline" and usage["input"] > 0 and usage["output"] > 0
    expected = (usage["input"] * 2.0 + usage["output"] * 8.0) / 1_000_000
    assert abs(finished["cost"]["usd"] - expected) < 1e-9
    assert finished["cost"]["gi_minutes"] > 0  # 2 sandboxes x 1 Gi held while it ran
    human = steward("status", cwd=workspace).stdout
    assert "LLM" in human and "Gi·min" in human and "steward/offline" in human
    assert "Cost: LLM" in (workspace / "status.md").read_text()
