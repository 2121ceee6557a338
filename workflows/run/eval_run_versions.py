"""Which runs this release continues, and every patch flag that is left: the one place for both.

The policy (README, "Upgrading Steward"): **a release continues the runs started by the release
before it, and refuses older ones with a clear message.** A flag guards a change of commands
for runs started before it; once every run a release must continue took the new branch, the
old branch is deleted and the flag goes through Temporal's documented retirement:

1. `workflow.patched(id)`: both branches (the release that adds the change).
2. `workflow.deprecate_patch(id)`: the new branch only; the marker is still matched, so runs
   that recorded it replay (the release after; listed below with the date it may go).
3. The call is deleted (the release after that, once no supported run recorded the marker as
   anything but deprecated).

Between 2 and 3 a retired flag is matched on replay only (`_match_recorded`): its call is made
while replaying a history, where it takes the marker that history recorded (0.2.0's runs
recorded these flags as `patched`, not deprecated, so without the call they do not replay:
tests/unit/test_replay_histories.py), and skipped while a run is executing anew, where it
would only write a marker nobody reads: a new run's timeline in the web UI shows no marker of a
retired flag. This is as sound as the bare call because a deprecated call commands nothing
while replaying a history that has no marker for it (the SDK's `patched(..., deprecated=True)`
answers from the markers the history holds), and Temporal skips a deprecated marker no call
matches: so a history recorded either way replays on code either way.

A release tells the runs it must refuse by a marker the previous release recorded at start:
0.2.0's newest flag (`budget-episode-v1`) now, this release's own `release-0.3` from 0.4 on.
A run started before it stops at its first workflow task with `UnsupportedRun`: a workflow-task
failure, not a failed run, so nothing is lost and the release that started it can still finish it.
tests/histories keeps a history of each supported kind (replayed), tests/histories/refused one
of each refused kind (replayed to the refusal).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from temporalio import workflow

RELEASE = "0.3.0"
RELEASE_DATE = date(2026, 12, 5)
PREVIOUS_RELEASE = "0.2.0"
# Recorded by every run this release starts: how release 0.4 tells them from 0.2.0's runs.
RELEASE_MARKER = "release-0.3"
# 0.2.0's newest flag: every run 0.2.0 started recorded it; no older run did.
SUPPORTED_SINCE = "budget-episode-v1"


@dataclass(frozen=True)
class RetiredFlag:
    id: str
    meaning: str  # what the new branch, now the only one, does
    may_go: date  # the deprecate_patch call may be deleted in the first release on or after this


# Deprecated in 0.3.0; may go in 0.4 (a release after 0.3.0, and 30 days after it at the
# earliest: runs take days, so every 0.3.0 run has that long to finish or continue-as-new).
_GOES = RELEASE_DATE + timedelta(days=30)

# In the order of the markers in recorded histories (the first workflow task): keep it.
AT_START = (
    RetiredFlag("decisions-v1", "decisions, notifications and signoff", _GOES),
    RetiredFlag("capacity-v1", "admission through the capacity ledger", _GOES),
    RetiredFlag("delta-v1", "drift reports", _GOES),
    RetiredFlag("timer-v1", "the tend interval follows _steward.yaml edits", _GOES),
    RetiredFlag("watch-v1", "a heartbeating watch per task worker", _GOES),
    RetiredFlag("heal-v1", "errored samples a resumed task completed leave their classes", _GOES),
    RetiredFlag("scan-v2", "each complete task is scanned beside the run", _GOES),
    RetiredFlag("budget-v1", "one connection budget per provider, shared by the workers", _GOES),
    RetiredFlag("handover-v1", "a continue-as-new between tends does not tend on arrival", _GOES),
    RetiredFlag("settle-v1", "a signoff waits for the scan of logs completed since", _GOES),
    RetiredFlag("scan-pair-v1", "once eval work ends, a second scan runs beside the first", _GOES),
    RetiredFlag("handler-tends-v1", "a full history still tends for a waiting handler", _GOES),
    RetiredFlag("orphan-v1", "a run whose workspace is gone ends `orphaned`", _GOES),
    RetiredFlag("scan-widen-v1", "a running scan takes the connections of one that ended", _GOES),
)
# Read at the first tend, where recorded histories have its marker.
AT_FIRST_TEND = RetiredFlag("ramp-v1", "the automatic ramp", _GOES)

# Flags this release added, each read by its function below. Their old branch serves runs
# 0.2.0 started; 0.4 continues only 0.3 runs (which all took the new branch), so there each
# becomes a deprecate_patch, and the call itself goes in the release after.
CANCEL_COUNT = "cancel-count-v1"
DEFERRED_RERUN = "deferred-rerun-v1"
ROUTE_BY_TIME = "route-by-time-v1"
HOST_BACK = "host-back-v1"
REMOTE_STUCK = "remote-stuck-v1"
HOSTS_AT_ONCE = "hosts-at-once-v1"
HOST_CHECK = "host-check-v1"
READ_AHEAD = "read-ahead-v1"
LEDGER_HANDOVER = "ledger-handover-v1"  # the CapacityLedger's, not EvalRun's
LEDGER_ANSWERS = "ledger-answers-v1"  # the CapacityLedger's, not EvalRun's
ASK_BY_SIGNAL = "ask-by-signal-v1"
BUDGET_BRACKET = "budget-bracket-v1"
SETPOINT_HEADROOM = "setpoint-headroom-v1"


@dataclass(frozen=True)
class LiveFlag:
    id: str
    meaning: str
    old_branch_goes: date  # in the first release on or after this (0.4)


_NEXT_RELEASE = RELEASE_DATE + timedelta(days=30)
LIVE = (
    LiveFlag(CANCEL_COUNT, "a cancel counts every sample its logs completed", _NEXT_RELEASE),
    LiveFlag(DEFERRED_RERUN, "a rerun waits until the provider answers", _NEXT_RELEASE),
    LiveFlag(
        ROUTE_BY_TIME, "an agent's item is routed after route_after, not 2 tends", _NEXT_RELEASE
    ),
    LiveFlag(
        HOST_BACK,
        "a lost host heard again is noticed at a tend and the operator told once",
        _NEXT_RELEASE,
    ),
    LiveFlag(
        REMOTE_STUCK, "stuck samples are looked for on every host's task workers", _NEXT_RELEASE
    ),
    LiveFlag(
        READ_AHEAD,
        "a tend reads the options (and a first budget) beside its observe",
        _NEXT_RELEASE,
    ),
    LiveFlag(
        LEDGER_HANDOVER,
        "a capacity ledger continues as new every 1,000 history events",
        _NEXT_RELEASE,
    ),
    LiveFlag(
        LEDGER_ANSWERS,
        "a capacity ledger sends what it owes runs at once, a batch at a time",
        _NEXT_RELEASE,
    ),
    LiveFlag(
        ASK_BY_SIGNAL,
        "a run asks its capacity ledger by signal and waits for the answer signal",
        _NEXT_RELEASE,
    ),
    LiveFlag(
        BUDGET_BRACKET,
        "a connection budget learns between its clean and pushback levels, and a lesson holds",
        _NEXT_RELEASE,
    ),
    LiveFlag(
        SETPOINT_HEADROOM,
        "tasks start a quarter over their share of a learned connection budget",
        _NEXT_RELEASE,
    ),
    LiveFlag(HOSTS_AT_ONCE, "a tend observes the other hosts at once", _NEXT_RELEASE),
    LiveFlag(
        HOST_CHECK, "a host must see the definition and the logs to be placed on", _NEXT_RELEASE
    ),
)


class UnsupportedRun(Exception):
    """A run this release does not continue. Raised in the workflow, it fails the workflow task
    (retried), never the run: downgrading Steward finishes it, as the message says."""


def refusal(workflow_id: str) -> str:
    return (
        f"run {workflow_id} was started by a Steward release before {PREVIOUS_RELEASE}; Steward "
        f"{RELEASE} continues runs started by {PREVIOUS_RELEASE} or later. Finish it with the "
        f"release that started it, or end it (`temporal workflow terminate --workflow-id "
        f"{workflow_id}`) and run `steward launch` again: its logs keep every completed sample."
    )


def read_at_start() -> None:
    """At a run's (or a continued run's) first activation, before any handler: match the retired
    flags' markers, refuse a run older than the previous release, and mark this release."""
    for flag in AT_START:
        _match_recorded(flag)
    if not workflow.patched(SUPPORTED_SINCE):
        raise UnsupportedRun(refusal(workflow.info().workflow_id))
    workflow.patched(RELEASE_MARKER)  # recorded for 0.4's check; its answer is not needed


def read_at_first_tend() -> None:
    """The ramp's marker, where recorded histories have it (the SDK matches it once)."""
    _match_recorded(AT_FIRST_TEND)


def _match_recorded(flag: RetiredFlag) -> None:
    """A retired flag's marker, matched where a replayed history recorded it and never written
    anew (the module docstring says why that is sound)."""
    if workflow.unsafe.is_replaying():
        workflow.deprecate_patch(flag.id)


def cancel_counts_from_the_logs() -> bool:
    """cancel-count-v1: a cancel reads the logs once its workers stopped, so its count has
    every completed sample (a run cancelled before it replays without that read)."""
    return workflow.patched(CANCEL_COUNT)


def defers_reruns() -> bool:
    """deferred-rerun-v1, read when a rerun is ruled `--when-provider-answers`: the run probes
    the provider on a timer of its own (new timers and activities) and carries the rerun out
    once it answers. A history recorded before it, replayed, applied such a ruling at once."""
    return workflow.patched(DEFERRED_RERUN)


def routes_by_time() -> bool:
    """route-by-time-v1, read once at a run's first activation (eval_run.py): an agent's item
    goes to the operator when no agent collected within `route_after` (wall-clock, and the
    timer wakes the run at that moment), not after two tends. A run started before it keeps
    routing by tends: its recorded notices and timers replay unchanged."""
    return workflow.patched(ROUTE_BY_TIME)


def tells_of_hosts_back() -> bool:
    """host-back-v1: while a host is lost to a run, each tend asks the registry whether it is
    heard again (a LIST_HOSTS activity), and a host heard again is a `host_back` notice."""
    return workflow.patched(HOST_BACK)


def looks_for_remote_stuck() -> bool:
    """remote-stuck-v1: another host's observe also asks its workers for stuck samples, and
    the run files them as it files the workspace host's."""
    return workflow.patched(REMOTE_STUCK)


def reads_ahead() -> bool:
    """read-ahead-v1, read at each tend's start: the live options (and, before a first spawn,
    the provider ledger's budgets) are read beside the observe, not after it, so an admitted
    run spawns one round of activities sooner (eval_run_read_ahead.py). A history recorded
    before it replays with the reads one after the other."""
    return workflow.patched(READ_AHEAD)


def ledger_hands_over_early() -> bool:
    """ledger-handover-v1, read at a CapacityLedger execution's start: it continues as new every
    HANDOVER_EVENTS history events (capacity_ledger.py), not only when Temporal suggests it
    (thousands of events later). A ledger execution started before it keeps handing over
    when suggested; its next execution takes the new branch."""
    return workflow.patched(LEDGER_HANDOVER)


def ledger_signals_at_once() -> bool:
    """ledger-answers-v1, read at a CapacityLedger execution's start: the signals it owes runs
    (answers, pumped admissions) go out at once, a batch at a time, not one workflow task after
    another; an execution started before it sends them one by one."""
    return workflow.patched(LEDGER_ANSWERS)


def asks_by_signal() -> bool:
    """ask-by-signal-v1, read at each admission: the run's activity signals the ledger (no
    update: Temporal takes 10 in flight per workflow) and the run waits for the ledger's answer
    signal. A run that asked by update replays with the answer in the activity's result."""
    return workflow.patched(ASK_BY_SIGNAL)


def asks_hosts_at_once() -> bool:
    """hosts-at-once-v1: a tend observes its other hosts concurrently (their activities are
    scheduled in one workflow task); a run that asked them one after the other replays so."""
    return workflow.patched(HOSTS_AT_ONCE)


def checks_host_storage() -> bool:
    """host-check-v1: before placing task workers on another host, the run asks that host
    (an activity on its queue) whether it can see the definition and write the log storage,
    and leaves it out, saying why, when it cannot."""
    return workflow.patched(HOST_CHECK)


def brackets_budgets() -> bool:
    """budget-bracket-v1, read as a run seeds a provider's budget: on pushback the budget falls
    back to the highest level that ran clean, and one seeded from an earlier run's lesson holds
    there while it is remembered (provider_budget's "Brackets"). A budget seeded before it
    falls by tenths and raises past a lesson at once."""
    return workflow.patched(BUDGET_BRACKET)


def sizes_setpoints_with_headroom() -> bool:
    """setpoint-headroom-v1, read as a run sizes its tasks' starting setpoints to a learned
    budget: a quarter more samples than connections, so a freed connection is taken at once
    (provider_budget's "Starting setpoints"). A run sized before it started at the share."""
    return workflow.patched(SETPOINT_HEADROOM)
