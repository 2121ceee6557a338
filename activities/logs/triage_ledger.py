"""The triage ledger, on disk: every instance of a run's sample error classes, one JSON line a
change (workflows/policy/triage_ledger.py says why and who writes what).

Lines, appended only:
* `{"seq", "op": "add", "class", "key", "anomaly", "applied"?, "applied_log"?}` an instance the
  run took in; `{"seq", "op": "remove", "class", "key"}` one it let go (healed); `{"seq", "op":
  "rerun", "class", "key": ref}` a re-run recorded before the ledger. The run numbers these; an
  append skips those the file already has, so an activity retried after it wrote them writes
  nothing twice.
* `{"op": "applied", "key", "verdict", "log"}` a ruling's effect done on an instance, and
  `{"op": "rerun", "class", "key": ref, "uuid"}` a sample a ruling re-ran: written by the apply
  activity once it did them (doing one again is harmless: every effect is idempotent).

A reader keeps what it read and reads only what was appended since (an activity process reads
the ledger once, then a few lines a tend). A torn last line (a crash mid-write) is left for the
next append to complete: lines are written whole with one write, and a line that does not parse
is skipped and rewritten by the run's next append.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from steward.workflows.policy.decisions import Anomaly, LedgerOp


@dataclass
class Held:
    """One instance the ledger holds."""

    class_id: str
    anomaly: Anomaly
    applied: str | None = None
    applied_log: str | None = None


@dataclass
class Ledger:
    path: Path
    offset: int = 0
    seq: int = 0  # the highest sequence number of the run's own changes in the file
    held: dict[str, Held] = field(default_factory=dict)  # instance key -> instance
    reruns: dict[str, set[str]] = field(default_factory=dict)  # sample ref -> re-run uuids

    def read_on(self) -> None:
        """Take in what was appended since the last read."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        for line in data[:end].splitlines():
            try:
                self._take(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue  # a torn line from a crash: its change comes again with its seq
        self.offset += end

    def _take(self, record: dict) -> None:
        op, key = record["op"], record["key"]
        self.seq = max(self.seq, record.get("seq", 0))
        if op == "add":
            self.held[key] = Held(
                class_id=record["class"],
                anomaly=Anomaly.model_validate(record["anomaly"]),
                applied=record.get("applied"),
                applied_log=record.get("applied_log"),
            )
        elif op == "remove":
            self.held.pop(key, None)
        elif op == "applied" and key in self.held:
            self.held[key].applied = record["verdict"]
            self.held[key].applied_log = record.get("log")
        elif op == "rerun":
            self.reruns.setdefault(key, set()).update(filter(None, [record.get("uuid")]))

    def append(self, records: list[dict]) -> None:
        """Append whole lines in one write, then take them in."""
        if not records:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
        with open(self.path, "ab") as handle:
            handle.write(text.encode())
            handle.flush()
            os.fsync(handle.fileno())
        self.read_on()

    def write_ops(self, ops: list[LedgerOp]) -> None:
        """The run's own changes the file does not have yet."""
        self.read_on()
        self.append(
            [
                {
                    "seq": op.seq,
                    "op": op.op,
                    "class": op.class_id,
                    "key": op.key,
                    **({"anomaly": op.anomaly.model_dump(mode="json")} if op.anomaly else {}),
                    **({"applied": op.applied, "applied_log": op.applied_log} if op.applied else {}),
                }
                for op in ops
                if op.seq > self.seq
            ]
        )

    def of_class(self, class_id: str) -> dict[str, Held]:
        return {key: held for key, held in self.held.items() if held.class_id == class_id}

    def runs(self) -> set[tuple[str, str | None]]:
        """(sample ref, uuid) of every instance held: an errored run a re-run replaces stays in
        its log until the re-run lands, and is not new."""
        return {(h.anomaly.sample_ref, h.anomaly.uuid) for h in self.held.values()}


_open: dict[str, Ledger] = {}


def open_ledger(path: str, ops: list[LedgerOp]) -> Ledger:
    """The ledger at `path`, read up to date, with the run's pending changes written first."""
    ledger = _open.get(path)
    if ledger is None or (ledger.path.exists() and ledger.path.stat().st_size < ledger.offset):
        ledger = _open[path] = Ledger(Path(path))  # new, or replaced since it was read
    ledger.write_ops(ops)
    return ledger
