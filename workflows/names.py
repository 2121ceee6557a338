"""The names Temporal records in histories, each written once.

Activities are registered under these names (`@activity.defn(name=Activity.X)`) and called by
them from the workflows, which may not import activities. Signals that one workflow sends
another are named here too, so the sender needs no import of the receiver (which would be a
circle). A name is a wire format: renaming one breaks the replay of every recorded history;
tests/unit/test_names.py checks this table against what the worker registers.
"""

from __future__ import annotations

from typing import Final

from temporalio.common import SearchAttributeKey


class Activity:
    """Every activity the Steward worker registers, by the name histories record."""

    APPLY_ACTIONS: Final = "apply_actions"
    APPLY_SETPOINTS: Final = "apply_setpoints"
    CAPTURE_DEFINITION: Final = "capture_definition"
    CHECK_CREDENTIALS: Final = "check_credentials"
    CHECK_HOST_STORAGE: Final = "check_host_storage"  # can a host see the definition and logs
    CURATE_LOGS: Final = "curate_logs"
    EXCHANGE_PROVIDER_BUDGETS: Final = "exchange_provider_budgets"
    FETCH_FROM_STORE: Final = "fetch_from_store"
    LIST_HOSTS: Final = "list_hosts"
    MOVE_LOGS: Final = "move_logs"
    NOTIFY: Final = "notify"
    OBSERVE_RUN: Final = "observe_run"
    PROBE_CAPACITY: Final = "probe_capacity"
    PROBE_PROVIDER: Final = "probe_provider"  # a rerun deferred until its provider answers
    # The options re-read each tend; the wire name is from when they held only the ramp.
    READ_LIVE_OPTIONS: Final = "read_ramp_settings"
    REAP_SANDBOXES: Final = "reap_sandboxes"
    REQUEST_ADMISSION: Final = "request_admission"
    SCAN_TRANSCRIPTS: Final = "scan_transcripts"
    SMOKE_TASKS: Final = "smoke_tasks"
    SPAWN_WORKER: Final = "spawn_worker"
    STOP_WORKERS: Final = "stop_workers"
    TIDY_LOGS: Final = "tidy_logs"
    WATCH_WORKER: Final = "watch_worker"
    WRITE_WORKSPACE: Final = "write_workspace"

    @classmethod
    def all(cls) -> set[str]:
        return {v for k, v in vars(cls).items() if k.isupper()}


class Signal:
    """Signals a workflow sends to another (the receiver declares them with these names)."""

    ADMITTED: Final = "admitted"  # CapacityLedger -> EvalRun
    ASK_ADMISSION: Final = "ask_admission"  # EvalRun's admission activity -> CapacityLedger
    ADMISSION_ANSWER: Final = "admission_answer"  # CapacityLedger -> EvalRun: that ask's answer
    RELEASE: Final = "release"  # EvalRun -> CapacityLedger: give part back
    WITHDRAW: Final = "withdraw"  # EvalRun -> CapacityLedger: leave the ledger
    HOST_HEARTBEAT: Final = "host_heartbeat"  # Steward worker -> HostRegistry: still here
    HOST_SUBSCRIBE: Final = "host_subscribe"  # EvalRun -> HostRegistry: tell me of a loss
    HOST_LOST: Final = "host_lost"  # HostRegistry -> EvalRun: a host went silent


class WorkflowType:
    EVAL_RUN: Final = "EvalRun"
    CAPACITY_LEDGER: Final = "CapacityLedger"
    CREDENTIALS_CHECK: Final = "CredentialsCheck"
    PROVIDER_LEDGER: Final = "ProviderLedger"
    PREFLIGHT: Final = "Preflight"
    HOST_REGISTRY: Final = "HostRegistry"


class SearchKey:
    """Search attributes a run keeps current, for `steward runs` and the web UI's list."""

    WORKSPACE: Final = SearchAttributeKey.for_keyword("StewardWorkspace")
    STATE: Final = SearchAttributeKey.for_keyword("StewardState")
    SAMPLES_DONE: Final = SearchAttributeKey.for_int("StewardSamplesDone")
    SAMPLES_TOTAL: Final = SearchAttributeKey.for_int("StewardSamplesTotal")

    @classmethod
    def all(cls) -> list[SearchAttributeKey]:
        return [v for k, v in vars(cls).items() if k.isupper()]


# name -> Temporal indexed value type, as `temporal server start-dev --search-attribute` wants it
SEARCH_ATTRIBUTES: dict[str, str] = {
    key.name: key.indexed_value_type.name.title() for key in SearchKey.all()
}
