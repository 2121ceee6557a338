"""Fixtures shared across the tiers (tests/unit, tests/integration, tests/e2e)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.fake_docker import FakeDocker
from harness.scanning import offline_eval_log


@pytest.fixture
def no_offline_knobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing from the outer environment steers the offline model (STEWARD_OFFLINE_*) or
    Inspect's driven modes (INSPECT_EVAL_SET_*); a child process inherits the cleared env."""
    for name in list(os.environ):
        if name.startswith(("STEWARD_OFFLINE_", "INSPECT_EVAL_SET_")):
            monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One real `.eval` log of the offline model: three samples (harness.scanning.WORDS),
    all scored correct."""
    return offline_eval_log(tmp_path_factory.mktemp("logs"))


@pytest.fixture
def fake_docker(tmp_path):
    """Start fake Docker Engine APIs on Unix sockets: `fake_docker(pools)` -> FakeDocker (its
    `url` is a DOCKER_HOST); all are closed after the test."""
    fakes: list[FakeDocker] = []

    def start(pools: list[dict] | None = None) -> FakeDocker:
        fake = FakeDocker(tmp_path / f"docker-{len(fakes)}.sock", pools)
        fakes.append(fake)
        return fake

    yield start
    for fake in fakes:
        fake.close()


@pytest.fixture
def daemon(fake_docker) -> FakeDocker:
    """One fake Docker Engine API with the built-in address pools and no containers."""
    return fake_docker(None)


def _empty_dirs(config: pytest.Config, paths: list[Path]) -> list[str]:
    """The directories named on the command line (tiers: tests/unit, tests/integration,
    tests/e2e) under which none of `paths` lies."""
    root = config.invocation_params.dir
    empty = []
    for arg in config.args:
        directory = (root / arg.split("::")[0]).resolve()
        if directory.is_dir() and not any(directory in path.parents for path in paths):
            empty.append(arg)
    return empty


def _fail_empty(config: pytest.Config, paths: list[Path]) -> None:
    """A tier that yields no tests fails the session loudly (exit 5), even when the other tiers
    named beside it have tests: `make test` names all three."""
    empty = _empty_dirs(config, paths)
    if empty:
        pytest.exit(f"no tests collected in {', '.join(empty)}", pytest.ExitCode.NO_TESTS_COLLECTED)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # an xdist worker: the controller checks
        _fail_empty(config, [item.path for item in items])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:
    root = node.config.rootpath
    _fail_empty(node.config, [root / nodeid.split("::")[0] for nodeid in ids])


@pytest.fixture
def fast_watch(monkeypatch):
    """A watch that looks often, so each watch test takes about as long as the limit it checks."""
    from steward.activities.processes import watch
    from steward.workflows.policy import worker_watch

    monkeypatch.setattr(watch, "ALIVE_EVERY_S", 0.05)
    monkeypatch.setattr(watch, "LOOK_EVERY_S", 0.2)
    monkeypatch.setattr(worker_watch, "COMPLETE_GRACE_S", 0.5)


@pytest.fixture(scope="module")
def identifier(eval_log) -> str:
    """The task identifier of the real successful log `eval_log`."""
    from steward.activities.logs.log_listing import log_info

    info = log_info(eval_log)
    assert info is not None and info.status == "success"
    return info.identifier
