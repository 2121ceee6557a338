"""How large a big run's state and payloads are: a run of 50,000 samples (100 tasks), of which
5,000 errored in 3 classes, with 1,000 decisions raised over the run (20 still open; and the worst
case, all 1,000 open at once) and 1,000 journal events waiting to be written.

The state is built by the run's own pure policy (decisions.absorb, rulings.apply_rule,
rulings.pending_actions) from anomalies shaped as the anomalies activity makes them, then every
payload the run sends or answers is measured as Temporal carries it (the pydantic data
converter's JSON): the run's state, its continue-as-new input, the status and collect queries,
the workspace write, the observe request and the apply request of a ruling on the largest
class. Temporal refuses a payload over 2 MB (its `limit.blobSize.error`) and gRPC a message
over 4 MB; Steward keeps each under BOUND.

    .venv/bin/python -m bench.state_size     # table, then one JSON line of the sizes in bytes
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.table import Table
from temporalio.contrib.pydantic import pydantic_data_converter

from steward.workflows.activity_io import (
    AnomalyRequest,
    ApplyRequest,
    ObserveRequest,
    WorkspaceWrite,
)
from steward.workflows.contracts import (
    JournalEvent,
    Observation,
    RunInput,
    RunSettings,
    RunState,
    RunStatus,
    TaskSpec,
    TaskState,
)
from steward.workflows.policy import decisions, healing, rulings, triage_ledger
from steward.workflows.policy.decisions import Anomaly, StandingRules, Triage
from steward.workflows.policy.rulings import RuleRequest
from steward.workflows.policy.triage_ledger import MAX_HEALED, MAX_NEW
from steward.workflows.views import eval_run_views

BOUND = 1_000_000  # bytes: every payload of the run stays under this, whatever its size
NOW = datetime(2026, 12, 5, tzinfo=UTC)
TASKS, SAMPLES, ERRORS, DECISIONS, OPEN, JOURNAL = 100, 500, 5_000, 1_000, 20, 1_000
LOG_DIR = "/home/researcher/evals/agentic-suite-2026-12/logs"
# Three real-looking failures: an API error, a tool crash, a scorer bug (Inspect's messages).
FAILURES = [
    ("RateLimitError", "openai/_base_client.py:_request", "Error code: 429 - {'error': {'message': 'Rate limit reached for gpt-4o in organization org-xxxx on tokens per min (TPM): Limit 30000000, Used 29999000, Requested 2400. Please try again in 4ms.', 'type': 'tokens', 'param': None, 'code': 'rate_limit_exceeded'}}"),
    ("RuntimeError", "agentic_suite/tools/browser.py:navigate", "RuntimeError('browser session closed unexpectedly while navigating to https://example.test/some/long/path?with=query&and=more (exit code 137); last stderr: [1205/120000.000:ERROR:zygote_host_impl_linux.cc(263)] Failed to adjust OOM score of renderer')"),
    ("KeyError", "agentic_suite/scorers/rubric.py:score", "KeyError: 'final_answer' — the rubric scorer expected the model's final message to carry a JSON object with a final_answer field; got: I think the answer is probably 42, but let me double check the units before committing to it..."),
]  # fmt: skip


def task_spec(n: int) -> TaskSpec:
    name = f"agentic_task_{n:03d}"
    return TaskSpec(
        name=name,
        model="openai/gpt-4o-2024-11-20",
        identifier=f"evalset.py@{name}#a1b2c3d4",
        registry_name=f"agentic_suite/{name}",
        args_hash="0f1e2d3c4b5a6978",
        file="evalset.py",
        samples=SAMPLES,
        sandbox="docker",
    )


def sample_error(n: int) -> Anomaly:
    spec = task_spec(n % TASKS)
    error_type, frame, message = FAILURES[n % len(FAILURES)]
    return Anomaly(
        kind="sample_error",
        task=spec.identifier,
        task_name=spec.name,
        sample_id=f"sample-{n // TASKS:05d}",
        epoch=1,
        uuid=f"{n:022d}",
        log=f"{LOG_DIR}/2026-12-05T09-00-00+00-00_{spec.name}_{n % TASKS:022d}.eval",
        error_type=error_type,
        frame=frame,
        detail=message[:500],
    )


def approval(n: int) -> Anomaly:
    spec = task_spec(n % TASKS)
    return Anomaly(
        kind="approval",
        task=spec.identifier,
        task_name=spec.name,
        sample_id=f"sample-{n:05d}",
        epoch=1,
        uuid=f"approval-{n:06d}",
        tool="bash",
        detail=json.dumps({"cmd": "rm -rf /workspace/build && make -j8 all > build.log 2>&1"}),
    )


def big_run(open_decisions: int = OPEN) -> tuple[RunState, RunSettings]:
    settings = RunSettings(tend_interval=600, rules=StandingRules(policies=["Rerun 429s."]))
    state = RunState(phase="running", log_dir=LOG_DIR, tend_count=400, journal_seq=JOURNAL)
    state.tasks = [
        TaskState(spec=task_spec(n), phase="running", log=f"{LOG_DIR}/{n:03d}.eval")
        for n in range(TASKS)
    ]
    triage = state.triage
    tend = 0
    for start in range(0, ERRORS, MAX_NEW):  # as tends find them: MAX_NEW a look
        tend += 1
        batch = [sample_error(n) for n in range(start, start + MAX_NEW)]
        decisions.absorb(triage, batch, settings.rules, now=NOW, tend=tend)
        triage_ledger.written(triage, triage.ledger_seq)  # the next look wrote them
    # 1,000 decisions over the run: approvals, answered as they come but the last OPEN.
    for n in range(DECISIONS):
        tend += 1
        outcome = decisions.absorb(triage, [approval(n)], settings.rules, now=NOW, tend=tend)
        if n < DECISIONS - open_decisions:
            for decision_id in outcome.raised:
                request = RuleRequest(decision_id=decision_id, verdict="approve", by="ops")
                rulings.apply_rule(triage, request, settings.rules, now=NOW, tend=tend)
                # the next tend's apply activity answers it
                rulings.mark_applied(triage, rulings.pending_actions(triage, {}))
        decisions.forget_settled(triage)
    largest = max(triage.classes, key=lambda c: c.count)
    decision = next(d for d in triage.decisions if d.class_id == largest.id and d.open)
    request = RuleRequest(decision_id=decision.id, verdict="rerun", by="ops", reason="429s")
    rulings.apply_rule(triage, request, settings.rules, now=NOW, tend=tend + 1)
    decisions.forget_settled(triage)
    state.pending_journal = [
        JournalEvent(
            seq=n + 1,
            at=NOW + timedelta(seconds=n),
            event="anomalies",
            data={"error_class": largest.id, "new": 5},
        )
        for n in range(JOURNAL)
    ]
    return state, settings


def payload_size(value: object) -> int:
    [payload] = pydantic_data_converter.payload_converter.to_payloads([value])
    return len(payload.data)


def measure() -> dict[str, int]:
    state, settings = big_run()
    status = RunStatus(
        workflow_id="steward-agentic-suite",
        run_id="r",
        workspace="/home/researcher/evals/agentic-suite-2026-12",
        state=state.model_copy(update={"pending_journal": []}),
        tend_interval=600,
    )
    settled = {t.spec.identifier: t.log or "" for t in state.tasks}
    # The largest look a tend makes: MAX_NEW new instances still to write, MAX_NEW new found,
    # MAX_HEALED healed.
    pending = Triage()
    decisions.absorb(pending, [sample_error(n) for n in range(MAX_NEW)], settings.rules, now=NOW, tend=1)  # fmt: skip
    anomaly_request = AnomalyRequest(
        workspace=status.workspace,
        log_dir=LOG_DIR,
        tasks=[t.spec for t in state.tasks],
        workers=[],
        stuck_after=600,
        ledger=f"{status.workspace}/.steward/triage/0193a9f0-1c2d-7e3f-8a9b-0c1d2e3f4a5b.jsonl",
        ledger_ops=pending.ledger_ops,
        suspect_classes=healing.suspect_classes(state.triage),
    )
    observation = Observation(
        anomalies=[sample_error(n) for n in range(MAX_NEW)],
        healed={"c-1": {sample_error(n).sample_key: task_spec(n % TASKS).identifier for n in range(MAX_HEALED)}},
    )  # fmt: skip
    apply_request = ApplyRequest(
        workspace=status.workspace,
        actions=rulings.pending_actions(state.triage, settled),
        orders=triage_ledger.ledger_orders(state.triage, settled),
        settled_logs=settled,
        ledger=anomaly_request.ledger,
        ledger_ops=pending.ledger_ops,
    )
    return {
        "state_bytes": payload_size(state),
        "continue_as_new_bytes": payload_size(
            RunInput(
                workspace=status.workspace,
                definition="evalset.py",
                settings=settings,
                state=state,
                host_queue="steward-host-a",
                log_dir=LOG_DIR,
            )
        ),
        "status_query_bytes": payload_size(status),
        "collect_query_bytes": payload_size(eval_run_views.collect_view(state, settings, 0)),
        "workspace_write_bytes": payload_size(
            WorkspaceWrite(workspace=status.workspace, status=status, journal=state.pending_journal)
        ),
        "observe_request_bytes": payload_size(
            ObserveRequest(log_dir=LOG_DIR, workers=[], tasks=[], anomalies=anomaly_request)
        ),
        "observation_bytes": payload_size(observation),
        "apply_request_bytes": payload_size(apply_request),
        "errored_samples": sum(c.count for c in state.triage.classes if c.kind == "sample_error"),
        "decisions_raised": state.triage.decision_counter,
        "decisions_in_state": len(state.triage.decisions),
        # The worst case: every one of the 1,000 still waiting for an answer at once.
        "state_all_open_bytes": payload_size(big_run(open_decisions=DECISIONS)[0]),
        "samples": TASKS * SAMPLES,
    }


def main() -> None:
    figures = measure()
    table = Table(title=f"A run of {figures['samples']:,} samples: payload sizes (bound {BOUND:,} B)")
    table.add_column("payload")
    table.add_column("bytes", justify="right")
    table.add_column("within bound")
    for key, value in figures.items():
        if key.endswith("_bytes"):
            table.add_row(key.removesuffix("_bytes"), f"{value:,}", "yes" if value < BOUND else "NO")
    Console(stderr=True).print(table)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
