"""What Temporal cannot carry is refused before it is sent, in one sentence naming the field, its
size and the limit: an option (the CLI's prologue, the run's re-read), a command's payload, an
activity's result (the worker's payload guard)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput

from steward.activities.workspace.options import OptionsError, load_options, read_ramp_settings
from steward.cli.output import BAD_INPUT, CommandError
from steward.cli.run_calls import refuse_oversize
from steward.worker.payload_guard import PayloadGuard
from steward.workflows.activity_io import LiveOptionsRequest
from steward.workflows.contracts import CommandNote
from steward.workflows.payload_limits import (
    KB,
    MB,
    OPTION_VALUE_LIMIT,
    PAYLOAD_BUDGET,
    PAYLOAD_TOO_LARGE,
    format_over,
    format_size,
    oversize_option,
)

LONG_POLICY = "Never rerun a sample without asking. " * 10_000  # about 370 KB


@pytest.fixture(autouse=True)
def no_steward_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STEWARD_POLICIES", "STEWARD_PREAUTHORIZED", "STEWARD_NOTIFICATION"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    "size, shown",
    [(100, "100 bytes"), (256 * KB, "256 KB"), (2 * MB, "2 MB"), (int(2.3 * MB), "2.3 MB")],
)
def test_sizes_read_as_people_write_them(size, shown):
    assert format_size(size) == shown


def test_a_size_over_a_limit_never_reads_as_the_limit():
    assert format_over(int(2.3 * MB), 2 * MB) == "2.3 MB"
    assert format_over(256 * KB + 1, 256 * KB) == "262,145 bytes"


def test_one_value_over_its_limit_is_named():
    assert oversize_option({"policies": "short", "scanners": None}) is None
    found = oversize_option({"tend_interval": 600, "policies": LONG_POLICY})
    assert found is not None and found.name == "policies" and found.limit == OPTION_VALUE_LIMIT
    assert found.size > OPTION_VALUE_LIMIT


def test_values_each_within_their_limit_can_still_be_too_many_together():
    part = "x" * (200 * KB)
    values = {"policies": part, "scanners": [part], "a": part, "b": part, "c": part + "longest"}
    assert oversize_option(values) is None  # 1000 KB
    found = oversize_option({**values, "d": part})
    assert found is not None and found.name is None and found.largest == "c"


def _workspace(tmp_path: Path, yaml_text: str) -> Path:
    (tmp_path / "_steward.yaml").write_text(yaml_text)
    return tmp_path


def test_an_oversize_option_is_refused_in_one_sentence_only_where_it_would_travel(tmp_path):
    workspace = _workspace(tmp_path, f"policies: {LONG_POLICY!r}\n")
    assert load_options(workspace).policies == LONG_POLICY  # an activity reads it for itself
    with pytest.raises(OptionsError) as refused:
        load_options(workspace, sendable=True)
    message = str(refused.value)
    assert message == (
        f"Option 'policies' in {workspace / '_steward.yaml'} is 361.3 KB; Steward passes "
        "options through Temporal, whose payloads stop at 2 MB: keep it under 256 KB (put "
        "long policies in a file the agent reads and name the file)."
    )


def test_an_oversize_option_set_in_dotenv_is_named_there(tmp_path):
    (tmp_path / "_steward.yaml").write_text("")
    dotenv = tmp_path / ".env"
    dotenv.write_text("STEWARD_PREAUTHORIZED=" + "{" + ", ".join(
        f'"class-{i}-*": "rerun"' for i in range(12_000)) + "}\n")  # fmt: skip
    with pytest.raises(OptionsError, match=rf"Option 'preauthorized' \(STEWARD_PREAUTHORIZED "
                       rf"in {dotenv}\) is .* KB;.*keep it under 256 KB \(fewer, broader"):  # fmt: skip
        load_options(tmp_path, sendable=True)


def test_the_runs_reread_returns_the_refusal_as_its_problem_not_the_payload(tmp_path):
    workspace = _workspace(tmp_path, f"policies: {LONG_POLICY!r}\n")
    fresh = read_ramp_settings(LiveOptionsRequest(workspace=str(workspace)))
    assert fresh.rules is None and fresh.problem.startswith("Option 'policies' in ")
    small = _workspace(tmp_path, "policies: be kind\n")
    assert read_ramp_settings(LiveOptionsRequest(workspace=str(small))).problem is None


def test_a_command_too_large_to_send_is_refused_naming_its_field():
    refuse_oversize("The `pause` signal", CommandNote(reason="short", by="me"))
    with pytest.raises(CommandError) as refused:
        refuse_oversize("The `pause` signal", CommandNote(reason="y" * (3 * MB), by="me"))
    assert refused.value.code == BAD_INPUT
    assert str(refused.value) == (
        "The `pause` signal is 3 MB (its 'reason' is 3 MB); Steward sends it through Temporal, "
        "whose payloads stop at 2 MB: keep it under 1.5 MB (a short reason that names a file "
        "holding the rest)."
    )


class _Returns(ActivityInboundInterceptor):
    """The next interceptor: the activity itself, returning `value`."""

    def __init__(self, value: object) -> None:
        self.value = value

    async def execute_activity(self, input: ExecuteActivityInput) -> object:
        return self.value


def _guarded(value: object, limit: int | None = None) -> object:
    guard = PayloadGuard(pydantic_data_converter, limit)
    inbound = guard.intercept_activity(_Returns(value))
    call = ExecuteActivityInput(fn=lambda: None, args=[], executor=None, headers={})

    async def run() -> object:
        return await inbound.execute_activity(call)

    return asyncio.run(ActivityEnvironment().run(run))


def test_the_guard_passes_a_result_that_fits():
    assert _guarded({"ok": "x" * 1000}) == {"ok": "x" * 1000}


def test_the_guard_fails_an_oversize_result_once_naming_the_activity_size_and_limit():
    with pytest.raises(ApplicationError) as refused:
        _guarded("z" * (2 * MB))
    err = refused.value
    assert err.type == PAYLOAD_TOO_LARGE and err.non_retryable
    assert err.message.startswith(
        "the activity unknown returned 2 MB, more than the 1.5 MB Steward lets one Temporal "
        "payload carry (Temporal stops at 2 MB)"
    )
    assert PAYLOAD_BUDGET == 3 * MB // 2


def test_the_worker_can_lower_the_guards_limit(monkeypatch):
    monkeypatch.setenv("STEWARD_ACTIVITY_RESULT_LIMIT", str(10 * KB))
    assert PayloadGuard(pydantic_data_converter).limit == 10 * KB
    monkeypatch.setenv("STEWARD_ACTIVITY_RESULT_LIMIT", str(100 * MB))  # never above the budget
    assert PayloadGuard(pydantic_data_converter).limit == PAYLOAD_BUDGET
