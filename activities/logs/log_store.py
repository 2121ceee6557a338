"""Where a workspace's logs live, a store of finished logs to reuse rather than re-run, and the
archive beside the log dir, which is read as such a store and moved into and out of.

Every location may be a local path or an fsspec URL (activities/logs/paths.py).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from pathlib import Path

from pydantic import BaseModel
from temporalio import activity

from steward.activities.logs.paths import (
    exists,
    filesystem,
    is_url,
    join_location,
    local_path,
    location_name,
)
from steward.workflows.activity_io import FetchRequest, MoveRequest
from steward.workflows.contracts import TaskSpec
from steward.workflows.names import Activity
from steward.workflows.policy.delta import ArchivedLog
from steward.workflows.policy.layout import archive_dir_of


class StoreEntry(BaseModel):
    """A success log in a store: the task it completes and the samples it holds."""

    identifier: str  # Inspect's task identifier (what capture reports for the task)
    name: str
    model: str
    samples: int  # dataset samples the log ran (after any limit), per epoch
    epochs: int
    path: str


# store dir -> {log path -> ((mtime, size), entry or None: not a reusable log)}. Re-indexing
# an unchanged store lists it but reads no header.
_indexes: dict[str, dict[str, tuple[tuple[float | None, int], StoreEntry | None]]] = {}


def log_dir_for(workspace: str, log_root: str | None) -> str:
    """The workspace's log dir: `<workspace>/logs`, or under `log_root` a directory named for
    the workspace and a hash of its resolved path (two workspaces never share one)."""
    resolved = Path(workspace).expanduser().resolve()
    if not log_root:
        return str(resolved / "logs")
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:8]
    return join_location(local_path(log_root), f"{resolved.name}-{digest}")


def _samples(header) -> int:
    """Dataset samples a log ran per epoch. `eval.dataset.samples` is the whole dataset's
    count even under a `limit`; `sample_ids` are the ones that ran."""
    dataset = header.eval.dataset
    if dataset.sample_ids is not None:
        return len(dataset.sample_ids)
    epochs = header.eval.config.epochs or 1
    if header.results is not None:
        return header.results.total_samples // epochs
    return dataset.samples or 0


def _read_entry(path: str) -> StoreEntry | None:
    from inspect_ai._eval.evalset import task_identifier
    from inspect_ai.log import read_eval_log

    try:
        header = read_eval_log(path, header_only=True)
    except Exception:  # unreadable (or being written): not reusable
        return None
    if header.status != "success" or header.invalidated:
        return None
    return StoreEntry(
        identifier=task_identifier(header, None),
        name=header.eval.task,
        model=header.eval.model,
        samples=_samples(header),
        epochs=header.eval.config.epochs or 1,
        path=path,
    )


FLOW_PREFIX = "flow:"


def flow_store(location: str) -> str | None:
    """The Flow store `location` names, or None for a directory of .eval files: `flow:PATH`
    (`flow:auto` is Flow's default store), or a directory already holding a Flow store."""
    if location.startswith(FLOW_PREFIX):
        return location[len(FLOW_PREFIX) :] or "auto"
    local = local_path(location)
    if not is_url(local) and (Path(local).expanduser() / "flow_store").is_dir():
        return local
    return None


def _flow_api():
    """inspect-flow's store API, quietly (no .env search, no console output)."""
    try:
        from inspect_flow import api
    except ImportError as err:
        raise ValueError(
            "log_store names an Inspect Flow store, but the inspect-flow package is not "
            "installed; install Steward's flow extra (pip install 'steward-evals[flow]')."
        ) from err
    api.init(log_level="warning", display="none", dotenv_base_dir=None)
    return api


def _flow_logs(store: str) -> list[str]:
    """The log files a Flow store indexes (it holds paths; the logs stay where they are)."""
    api = _flow_api()
    from inspect_flow._store.store import store_exists

    if store != "auto" and not store_exists(store):
        return []
    return sorted(local_path(uri) for uri in api.store_get(store, create=False).get_logs())


def index_store(store: str) -> list[StoreEntry]:
    """The reusable logs (success, not invalidated) in a store, by file name: a directory of
    .eval files (local or fsspec) or a Flow store. A store that does not exist holds none."""
    flow = flow_store(store)
    if flow is not None:
        return _index(store, [(path, _stamp(path)) for path in _flow_logs(flow)])
    store = local_path(store)
    fs = filesystem(store)
    try:
        listing = [
            info
            for info in fs.ls(store, recursive=True)
            if info.type == "file" and info.name.endswith(".eval")
        ]
    except (FileNotFoundError, NotADirectoryError):
        listing = []
    listed_as = fs.dir_as_uri(store)  # the form ls() names files in; hand back the store's own
    files = []
    for info in listing:
        path = local_path(info.name)
        if is_url(store) and info.name.startswith(listed_as):
            path = store.rstrip("/") + info.name[len(listed_as) :]
        files.append((path, (info.mtime, info.size)))
    return _index(store, files)


def _stamp(path: str) -> tuple[float | None, int]:
    fs = filesystem(path)
    try:
        info = fs.info(path)
    except FileNotFoundError:
        return (None, -1)
    return (info.mtime, info.size)


def _index(store: str, files: list[tuple[str, tuple[float | None, int]]]) -> list[StoreEntry]:
    """Entries of a store's files, each header read once per version of its file."""
    known = _indexes.get(store, {})
    fresh: dict[str, tuple[tuple[float | None, int], StoreEntry | None]] = {}
    for path, stamp in files:
        cached = known.get(path)
        fresh[path] = cached if cached and cached[0] == stamp else (stamp, _read_entry(path))
    _indexes[store] = fresh
    entries = [entry for _, entry in fresh.values() if entry is not None]
    return sorted(entries, key=lambda e: location_name(e.path))


def satisfied(tasks: list[TaskSpec], entries: list[StoreEntry]) -> dict[str, StoreEntry]:
    """task identifier -> the store log that completes it: same identifier, samples and
    epochs (a result is only reused when everything matches); the newest file name wins."""
    found: dict[str, StoreEntry] = {}
    for task in tasks:
        matches = [
            e
            for e in entries
            if e.identifier == task.identifier
            and e.samples == task.samples
            and e.epochs == task.epochs
        ]
        if matches:
            found[task.identifier] = max(matches, key=lambda e: location_name(e.path))
    return found


def _copy(source: str, directory: str, keep_existing: bool) -> str:
    """Copy `source` into `directory` under its own name. An existing target is kept when
    `keep_existing`, else when it has the source's size. Local targets are written atomically."""
    from inspect_ai._util.file import copy_file

    source = local_path(source)
    directory = local_path(directory)
    target = join_location(directory, location_name(source))
    source_fs, target_fs = filesystem(source), filesystem(target)
    if target_fs.exists(target) and (
        keep_existing or target_fs.info(target).size == source_fs.info(source).size
    ):
        return target
    if is_url(target):
        target_fs.mkdir(directory, exist_ok=True)
        copy_file(source, target)
        return target
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(target).with_name(f".{location_name(target)}.tmp")
    if is_url(source):
        copy_file(source, str(tmp))
    else:
        shutil.copyfile(source, tmp)
    os.replace(tmp, target)
    return target


def fetch(entry_path: str, log_dir: str) -> str:
    """Copy a store log into the log dir (same name; kept if one of the same size is there)."""
    return _copy(entry_path, log_dir, keep_existing=False)


def publish(paths: list[str], store: str) -> list[str]:
    """Copy final logs into a store directory (a log already there is kept as it is), or
    index them in a Flow store where they are (Flow stores hold paths, not copies)."""
    flow = flow_store(store)
    if flow is None:
        return [_copy(path, store, keep_existing=True) for path in paths]
    local = [local_path(path) for path in paths]
    if local:
        _flow_api().store_get(flow, create=True).import_log_path(local)
    return local


def archive_location(log_dir: str) -> str:
    """The archive beside the log dir: `logs-archive/` for `logs/` (URLs too)."""
    return archive_dir_of(local_path(log_dir))


def archived_logs(log_dir: str) -> list[ArchivedLog]:
    """The success logs in the log dir's archive, with what each covers."""
    entries = index_store(archive_location(log_dir))
    return [ArchivedLog(**entry.model_dump()) for entry in entries]


def move(path: str, directory: str) -> str:
    """Move a log into a directory (to the archive or back), keeping its name."""
    path = local_path(path)
    directory = local_path(directory)
    target = join_location(directory, location_name(path))
    if is_url(target):
        fs = filesystem(target)
        fs.mkdir(directory, exist_ok=True)
        fs.mv(path, target)
    else:
        Path(directory).expanduser().mkdir(parents=True, exist_ok=True)
        try:
            os.replace(path, target)
        except OSError as err:
            if err.errno != errno.EXDEV:
                raise
            _move_across_devices(path, target)
    return target


def _move_across_devices(path: str, target: str) -> None:
    """A log dir on a mount of its own has its archive, beside it, on another file system,
    which a rename cannot reach (EXDEV). Copy under a temporary name, rename that into place
    (never half a log under a log's name), then remove the original: the log is in one place
    or in both, never in neither."""
    partial = f"{target}.moving"
    shutil.copyfile(path, partial)
    with open(partial, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(partial, target)
    os.unlink(path)


# ---------------------------------------------------------------- activities
@activity.defn(name=Activity.FETCH_FROM_STORE)
def fetch_from_store(request: FetchRequest) -> dict[str, str]:
    """Copy the store's logs that satisfy tasks into the run's log dir (idempotent)."""
    return {identifier: fetch(path, request.log_dir) for identifier, path in request.hits.items()}


@activity.defn(name=Activity.MOVE_LOGS)
def move_logs(request: MoveRequest) -> list[str]:
    """Move logs to the archive or back; a log already moved (a retry) is skipped."""
    moved = []
    for path, directory in request.moves:
        target = join_location(directory, location_name(path))
        if not exists(path) and exists(target):
            moved.append(target)
            continue
        moved.append(move(path, directory))
    return moved
