"""The unit tier: a warning raised in Steward's own modules (`steward.*`) fails the test that
raised it, so `make test-fast` stays free of Steward's warnings (third-party ones are filtered
by message and module in pyproject.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parent
STEWARD_WARNINGS_FAIL = pytest.mark.filterwarnings(r"error:::steward(\.|$)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if UNIT in Path(item.path).resolve().parents:
            item.add_marker(STEWARD_WARNINGS_FAIL)
