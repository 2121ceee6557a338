"""The pre-launch smoke's classification and waivers, without a process (the smoke runs
themselves are in tests/integration/test_smoke.py)."""

from __future__ import annotations

import pytest

from steward.activities.definition.smoke import (
    SmokeCheck,
    SmokeResult,
    classify,
    describe,
    stderr_error,
    waived,
)


@pytest.mark.parametrize(
    ("message", "traceback", "kind"),
    [
        ("Error code: 401 - {'error': {'message': 'Incorrect API key provided'}}", "", "model"),
        ("AuthenticationError('invalid x-api-key')", "", "model"),
        ("APIConnectionError('Connection error.')", "", "model"),
        ("[Errno 111] Connection refused", "", "model"),
        ("Model API nosuchprovider of model 'nosuchprovider/x' not recognized.", "", "model"),
        ("PermissionDeniedError: Error code: 403", "", "model"),
        (
            "RuntimeError('boom')",
            'File "/x/inspect_ai/util/_sandbox/docker/docker.py", line 1, in exec\n'
            "RuntimeError: boom",
            "sandbox",
        ),
        ("Docker daemon: permission denied while trying to connect", "", "sandbox"),
        ("Error response from compose: service default failed to start", "", "sandbox"),
        ("ValueError('could not parse the answer')", "", "task"),
        ("OfflineSampleFailure(\"offline model told to fail on 'X'\")", "", "task"),
    ],
)
def test_classify(message: str, traceback: str, kind: str) -> None:
    assert classify(message, traceback) == kind


def test_stderr_error_keeps_a_multiline_message_without_markup() -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "/v/inspect_ai/model/_providers/openai.py", line 258, in __init__\n'
        "    raise environment_prerequisite_error(\n"
        "inspect_ai._util.error.PrerequisiteError: ERROR: Unable to initialise OpenAI client\n"
        "\n"
        "No [bold][blue]OPENAI_API_KEY[/blue][/bold] defined in the environment.\n"
    )
    message, traceback = stderr_error(stderr)
    assert message == (
        "PrerequisiteError: Unable to initialise OpenAI client "
        "No OPENAI_API_KEY defined in the environment."
    )
    assert classify(message, traceback) == "model"
    assert stderr_error("") == ("", "")
    assert stderr_error("just a line\n") == ("just a line", "")


def test_waived_and_describe() -> None:
    checks = [
        SmokeCheck(task="a", model="m1", check="model", message="no key"),
        SmokeCheck(task="b_x", model="m2", check="sandbox", message="no docker"),
    ]
    result = SmokeResult(
        ok=False, checks=checks, tasks=["a", "b_x"], log_dir="d", seconds=1, samples=0
    )
    assert waived(result, []) == checks
    assert waived(result, ["model"]) == [checks[1]]
    assert waived(result, ["b_*:sandbox"]) == [checks[0]]
    assert waived(result, ["b_*:model"]) == checks
    assert waived(result, ["a", "sandbox"]) == []
    assert waived(result, ["*"]) == []
    assert describe(result) == "a (m1): model — no key\nb_x (m2): sandbox — no docker"
