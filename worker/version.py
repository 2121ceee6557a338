"""Steward's distribution name and version (the import package is `steward`; the distribution
is `steward-evals`, since `steward` on PyPI is an unrelated project)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "steward-evals"


def steward_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"
