"""The log store: indexing real .eval logs (local and fsspec), matching them to tasks,
fetching, publishing, archiving and moving them."""

from __future__ import annotations

import hashlib
import shutil
import uuid
from pathlib import Path

import fsspec
import pytest

from steward.activities.logs import log_store
from steward.activities.logs.log_listing import log_info
from steward.activities.logs.log_store import (
    archive_location,
    archived_logs,
    fetch,
    index_store,
    log_dir_for,
    move,
    publish,
    satisfied,
)
from steward.workflows.contracts import TaskSpec
from steward.workflows.policy.delta import ArchivedLog


def _task():
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    return Task(
        dataset=[Sample(id=i, input=f"Reply with: w{i}", target=f"w{i}") for i in range(1, 4)],
        solver=generate(),
        scorer=match(),
        name="alpha",
    )


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    """Real logs of one task: full (3 samples), 2 epochs, limited to 2 samples, errored,
    and a success log whose samples were invalidated."""
    from inspect_ai import eval
    from inspect_ai.log import read_eval_log, write_eval_log

    import steward.worker.inspect_plugins  # noqa: F401  (registers steward/offline)

    made = tmp_path_factory.mktemp("made")

    def run(name: str, **args) -> Path:
        (log,) = eval(
            _task(), model="steward/offline", log_dir=str(made / name), display="none", **args
        )
        return Path(log.location)

    found = {
        "full": run("full"),
        "epochs2": run("epochs2", epochs=2),
        "limit2": run("limit2", limit=2),
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STEWARD_OFFLINE_FAIL", "w2")
        found["error"] = run("error")
    invalid = read_eval_log(str(found["full"]))
    invalid.invalidated = True
    found["invalidated"] = made / "invalidated.eval"
    write_eval_log(invalid, str(found["invalidated"]))
    return found


@pytest.fixture(scope="module")
def identifier(logs) -> str:
    """The task's identifier, as observe computes it (Inspect's task_identifier)."""
    return log_info(str(logs["full"])).identifier


def _spec(identifier: str, samples: int = 3, epochs: int = 1) -> TaskSpec:
    return TaskSpec(
        name="alpha", model="steward/offline", identifier=identifier, samples=samples, epochs=epochs
    )


def _store(tmp_path: Path, logs: dict[str, Path], names: dict[str, str]) -> Path:
    store = tmp_path / "store"
    store.mkdir()
    for key, name in names.items():
        shutil.copyfile(logs[key], store / name)
    return store


def _memory_dir() -> str:
    return f"memory://steward-test-{uuid.uuid4().hex[:8]}"


def test_the_logs_are_what_the_tests_assume(logs, identifier):
    from inspect_ai.log import read_eval_log

    statuses = {k: read_eval_log(str(p), header_only=True).status for k, p in logs.items()}
    assert statuses == {
        "full": "success",
        "epochs2": "success",
        "limit2": "success",
        "error": "error",
        "invalidated": "success",
    }
    # epochs and limit are not part of a task's identity: only samples/epochs tell them apart
    assert {log_info(str(p)).identifier for p in logs.values()} == {identifier}


def test_log_dir_for(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    digest = hashlib.sha1(str(workspace.resolve()).encode()).hexdigest()[:8]
    assert log_dir_for(str(workspace), None) == str(workspace.resolve() / "logs")
    assert log_dir_for(str(workspace), str(tmp_path / "root")) == str(
        tmp_path / "root" / f"ws-{digest}"
    )
    assert log_dir_for(str(workspace), "memory://root/") == f"memory://root/ws-{digest}"
    assert log_dir_for(str(workspace), "s3://bucket/logs") == f"s3://bucket/logs/ws-{digest}"


def test_index_keeps_only_reusable_logs(tmp_path, logs, identifier):
    store = _store(
        tmp_path,
        logs,
        {
            "full": "2026-01-01T00-00-00_alpha_a.eval",
            "epochs2": "2026-01-02T00-00-00_alpha_b.eval",
            "limit2": "2026-01-03T00-00-00_alpha_c.eval",
            "error": "2026-01-04T00-00-00_alpha_d.eval",
            "invalidated": "2026-01-05T00-00-00_alpha_e.eval",
        },
    )
    (store / "notes.txt").write_text("not a log")
    entries = index_store(str(store))
    assert [(Path(e.path).name, e.samples, e.epochs) for e in entries] == [
        ("2026-01-01T00-00-00_alpha_a.eval", 3, 1),
        ("2026-01-02T00-00-00_alpha_b.eval", 3, 2),
        ("2026-01-03T00-00-00_alpha_c.eval", 2, 1),
    ]
    assert all(e.identifier == identifier for e in entries)
    assert {(e.name, e.model) for e in entries} == {("alpha", "steward/offline")}
    assert entries[0].path == str(store / "2026-01-01T00-00-00_alpha_a.eval")


def test_satisfied_only_when_everything_matches(tmp_path, logs, identifier):
    store = _store(
        tmp_path,
        logs,
        {
            "full": "2026-01-01T00-00-00_alpha_a.eval",
            "epochs2": "2026-01-02T00-00-00_alpha_b.eval",
            "limit2": "2026-01-03T00-00-00_alpha_c.eval",
            "error": "2026-01-09T00-00-00_alpha_z.eval",  # newest, but not a success
            "invalidated": "2026-01-08T00-00-00_alpha_y.eval",  # newer, but invalidated
        },
    )
    entries = index_store(str(store))

    def chosen(spec: TaskSpec) -> str | None:
        found = satisfied([spec], entries)
        return Path(found[spec.identifier].path).name if found else None

    assert chosen(_spec(identifier)) == "2026-01-01T00-00-00_alpha_a.eval"
    assert chosen(_spec(identifier, epochs=2)) == "2026-01-02T00-00-00_alpha_b.eval"
    assert chosen(_spec(identifier, samples=2)) == "2026-01-03T00-00-00_alpha_c.eval"
    assert chosen(_spec(identifier, samples=4)) is None
    assert chosen(_spec(identifier, epochs=3)) is None
    assert chosen(_spec(identifier.replace("alpha", "beta"))) is None

    # a newer success log of the same task wins
    shutil.copyfile(logs["full"], store / "2026-01-07T00-00-00_alpha_x.eval")
    found = satisfied([_spec(identifier), _spec("other")], index_store(str(store)))
    assert list(found) == [identifier]
    assert Path(found[identifier].path).name == "2026-01-07T00-00-00_alpha_x.eval"


def test_reindexing_an_unchanged_store_reads_no_header(tmp_path, logs, monkeypatch):
    store = _store(tmp_path, logs, {"full": "a.eval", "limit2": "b.eval"})
    first = index_store(str(store))

    def no_reading(path):
        raise AssertionError(f"read {path}")

    with monkeypatch.context() as patch:
        patch.setattr(log_store, "_read_entry", no_reading)
        assert index_store(str(store)) == first

    shutil.copyfile(logs["epochs2"], store / "b.eval")  # changed: read again
    read = []
    real = log_store._read_entry
    monkeypatch.setattr(log_store, "_read_entry", lambda p: read.append(p) or real(p))
    assert [e.epochs for e in index_store(str(store))] == [1, 2]
    assert read == [str(store / "b.eval")]


def test_a_missing_store_holds_nothing(tmp_path):
    assert index_store(str(tmp_path / "absent")) == []
    assert index_store(_memory_dir() + "/absent") == []


def test_fetch_copies_once_and_atomically(tmp_path, logs):
    store = _store(tmp_path, logs, {"full": "a.eval"})
    log_dir = tmp_path / "ws" / "logs"
    (entry,) = index_store(str(store))
    target = fetch(entry.path, str(log_dir))
    assert target == str(log_dir / "a.eval")
    assert Path(target).read_bytes() == logs["full"].read_bytes()
    stamp = Path(target).stat().st_mtime_ns
    assert fetch(entry.path, str(log_dir)) == target
    assert Path(target).stat().st_mtime_ns == stamp  # identical size: not copied again
    Path(target).write_bytes(b"torn")
    fetch(entry.path, str(log_dir))
    assert Path(target).read_bytes() == logs["full"].read_bytes()
    assert sorted(p.name for p in log_dir.iterdir()) == ["a.eval"]  # no temporary left


def test_publish_keeps_what_is_there(tmp_path, logs):
    store = tmp_path / "store"
    published = publish([str(logs["full"]), str(logs["limit2"])], str(store))
    assert published == [str(store / logs["full"].name), str(store / logs["limit2"].name)]
    assert sorted(e.samples for e in index_store(str(store))) == [2, 3]
    Path(published[0]).write_bytes(b"kept")
    assert publish([str(logs["full"])], str(store)) == published[:1]
    assert Path(published[0]).read_bytes() == b"kept"


def test_a_memory_store(tmp_path, logs, identifier):
    store = _memory_dir() + "/store"
    published = publish([str(logs["full"]), str(logs["error"])], store)
    assert published == [f"{store}/{logs['full'].name}", f"{store}/{logs['error'].name}"]
    (entry,) = index_store(store)
    assert entry.path == published[0]
    assert (entry.identifier, entry.samples, entry.epochs) == (identifier, 3, 1)
    assert satisfied([_spec(identifier)], [entry]) == {identifier: entry}

    local = fetch(entry.path, str(tmp_path / "logs"))
    assert Path(local).read_bytes() == logs["full"].read_bytes()

    remote_logs = _memory_dir() + "/logs"
    remote = fetch(str(logs["full"]), remote_logs)
    assert remote == f"{remote_logs}/{logs['full'].name}"
    assert fetch(str(logs["full"]), remote_logs) == remote
    with fsspec.open(remote, "rb") as handle:
        assert handle.read() == logs["full"].read_bytes()


def test_archive_and_move_back(tmp_path, logs, identifier):
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    success = Path(shutil.copy(logs["limit2"], log_dir))
    failed = Path(shutil.copy(logs["error"], log_dir))
    assert archived_logs(str(log_dir)) == []
    archive = archive_location(str(log_dir))
    assert archive == str(tmp_path / "logs-archive")
    moved = [move(str(p), archive) for p in (success, failed)]
    assert moved == [str(Path(archive) / success.name), str(Path(archive) / failed.name)]
    assert not success.exists()
    assert archived_logs(str(log_dir)) == [
        ArchivedLog(
            identifier=identifier,
            name="alpha",
            model="steward/offline",
            samples=2,
            epochs=1,
            path=moved[0],
        )
    ]
    assert move(moved[0], str(log_dir)) == str(success)
    assert success.exists() and archived_logs(str(log_dir)) == []


def test_archive_and_move_on_fsspec(logs, identifier):
    log_dir = _memory_dir() + "/logs"
    (path,) = publish([str(logs["epochs2"])], log_dir)
    archive = archive_location(log_dir + "/")
    assert archive == log_dir + "-archive"
    moved = move(path, archive)
    assert moved == f"{archive}/{logs['epochs2'].name}"
    fs = fsspec.filesystem("memory")
    assert not fs.exists(path) and fs.exists(moved)
    (entry,) = archived_logs(log_dir)
    assert (entry.identifier, entry.samples, entry.epochs) == (identifier, 3, 2)
    assert move(moved, log_dir) == path and fs.exists(path)
