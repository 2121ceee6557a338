"""The unit tier: a warning raised in Steward's own modules (`steward.*`) fails the test that
raised it, so `make test-fast` stays free of Steward's warnings (third-party ones are filtered
by message and module in pyproject.toml).

One warning is expected and not Steward's: replaying a history EvalRun refuses (a run older than
the previous release, tests/unit/test_replay_histories.py) leaves the coroutine the Temporal SDK
made to run `run()` unawaited, since the refusal is raised in `__init__`. It warns whenever it is
collected, which may be in another test, under a Steward frame, or after the session: it is
ignored by its exact message, here, for the whole unit session."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parent
REFUSED_RUN_NEVER_RUN = (
    r"coroutine '_WorkflowInstanceImpl\._apply_initialize_workflow\.<locals>\.run_workflow' "
    "was never awaited"
)
# The later filter wins: a Steward warning is an error; that one collected coroutine is not,
# nor a ResourceWarning (Python ignores those by default: one is said when an object is
# collected, under whatever frame runs then, not by the code that left it open).
STEWARD_WARNINGS_FAIL = pytest.mark.filterwarnings(
    r"error:::steward(\.|$)",
    f"ignore:{REFUSED_RUN_NEVER_RUN}:RuntimeWarning",
    "ignore::ResourceWarning",
)


def pytest_unconfigure(config: pytest.Config) -> None:
    """pytest collects the garbage once more after the session, outside every test's filters
    (a worker process of `-n 2` may keep that coroutine until then)."""
    warnings.filterwarnings("ignore", message=REFUSED_RUN_NEVER_RUN, category=RuntimeWarning)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if UNIT in Path(item.path).resolve().parents:
            item.add_marker(STEWARD_WARNINGS_FAIL)
