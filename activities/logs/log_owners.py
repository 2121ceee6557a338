"""Who may write a task's log: at most one live writer per task log, across hosts.

A run that places task workers on several hosts claims each task's log for the worker it
spawns, in an owner record beside the logs on the shared storage
(`<log_dir>/.steward-owners/<task>.json`: run, worker id, host). Worker ids grow within a run,
so a later claim wins: a spawn for an earlier worker (a retry that arrives late, from a host
that was lost and came back) is refused, and a task worker that finds its tasks claimed by a
later worker stops at once (`guard`, a thread in the worker itself), before it writes another
sample. Records of another run are stale: a new run owns its logs.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from dataclasses import dataclass

import fsspec

OWNER_ENV = "STEWARD_LOG_OWNER"  # what the worker's guard checks: JSON of a Claim
OWNERS_DIR = ".steward-owners"
GUARD_EVERY_S = 2.0
DISOWNED_EXIT = 75  # the exit code of a worker that found its logs claimed by a later one


@dataclass(frozen=True)
class Claim:
    log_dir: str
    run: str
    worker_id: str
    host: str
    identifiers: tuple[str, ...]

    def to_env(self) -> str:
        return json.dumps({**self.__dict__, "identifiers": list(self.identifiers)})

    @classmethod
    def from_env(cls, text: str) -> Claim:
        data = json.loads(text)
        return cls(**{**data, "identifiers": tuple(data["identifiers"])})


class Disowned(Exception):
    """A later worker of the same run owns one of these task logs."""


def _order(worker_id: str) -> tuple[int, str]:
    """Worker ids (w0001, ..., w10000) in the order the run made them."""
    digits = worker_id.lstrip("w")
    return (int(digits), worker_id) if digits.isdigit() else (-1, worker_id)


def _path(log_dir: str, identifier: str) -> str:
    name = hashlib.sha256(identifier.encode()).hexdigest()[:20]
    return f"{log_dir.rstrip('/')}/{OWNERS_DIR}/{name}.json"


def _read(log_dir: str, identifier: str) -> dict | None:
    fs, path = fsspec.core.url_to_fs(_path(log_dir, identifier))
    try:
        with fs.open(path, "r") as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return None


def later_owner(claim: Claim) -> tuple[str, str] | None:
    """(worker id, host) of a later worker of the same run owning one of the claim's logs."""
    for identifier in claim.identifiers:
        record = _read(claim.log_dir, identifier)
        if (
            record
            and record.get("run") == claim.run
            and _order(record["worker_id"]) > _order(claim.worker_id)
        ):
            return record["worker_id"], record.get("host", "")
    return None


def take(claim: Claim) -> None:
    """Claim the logs for this worker; Disowned if a later worker already has one."""
    later = later_owner(claim)
    if later is not None:
        raise Disowned(
            f"worker {claim.worker_id} was not started: its task logs now belong to worker "
            f"{later[0]}" + (f" on host {later[1]}" if later[1] else "")
        )
    for identifier in claim.identifiers:
        fs, path = fsspec.core.url_to_fs(_path(claim.log_dir, identifier))
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        record = {"run": claim.run, "worker_id": claim.worker_id, "host": claim.host}
        with fs.open(path, "w") as f:  # local: atomic enough (one small write); s3: whole object
            json.dump(record, f)


def guard() -> None:
    """In a task worker: watch its claim in a daemon thread; exit at once when disowned."""
    text = os.environ.get(OWNER_ENV)
    if not text:
        return
    claim = Claim.from_env(text)

    def check() -> None:
        while True:
            try:
                later = later_owner(claim)
            except OSError:  # storage briefly unreachable: look again
                later = None
            if later is not None:
                print(
                    f"steward: stopping: the task logs of {claim.worker_id} now belong to "
                    f"worker {later[0]} on host {later[1]}",
                    file=sys.stderr,
                    flush=True,
                )
                os._exit(DISOWNED_EXIT)
            threading.Event().wait(GUARD_EVERY_S)

    threading.Thread(target=check, name="steward-log-owner", daemon=True).start()
