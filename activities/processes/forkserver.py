"""One fork server per Steward worker, with Inspect (and inspect_scout) imported once.

Starting Python and importing Inspect costs ~5 CPU-seconds on this kind of machine; a run of 8
tasks paid it 8 times over on two cores before any sample started, and each integrity scan paid
~6 s more for inspect_scout. multiprocessing's forkserver imports them once, in a server the
Steward worker starts as it starts (`warm_up`), and forks each task worker and each scan from it.

Multiprocessing allows one fork server per process, with one preload list: both users share it.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from multiprocessing import forkserver
from typing import Any

PRELOAD = [
    # the integrity scan (activities/scan/scan_process.py)
    "inspect_scout",
    "inspect_ai.log",
    "steward.activities.scan.scan",
    "steward.activities.scan.scan_children",
    # task workers (activities/processes/worker_fork.py): Inspect's eval path, its providers and plugins
    "steward.worker.inspect_preload",
    "steward.activities.processes.worker_fork",
]


def context() -> Any:
    forking = multiprocessing.get_context("forkserver")
    forking.set_forkserver_preload(PRELOAD)
    return forking


_warming = threading.Event()  # warm_up has started
_warmed = threading.Event()  # ...and ended, ready or not
_ready = False


def _nothing() -> None:
    pass


def warm_up() -> None:
    """Start the fork server now and wait for its imports (seconds), so forks need not."""
    global _ready
    _warming.set()
    try:
        forking = context()
        forkserver.ensure_running()
        probe = forking.Process(target=_nothing, name="steward-forkserver-probe")
        probe.start()  # answered once the server has imported everything
        probe.join()
        _ready = probe.exitcode == 0
    finally:
        _warmed.set()


_starting = threading.Lock()


def start(process: Any) -> None:
    """Start `process` (of `context()`) without multiprocessing's "preparation": it would re-run
    this process's `__main__` (the Steward worker's whole module and its imports, ~1
    CPU-second) in every child, and no child needs it: each runs a preloaded function."""
    main = sys.modules["__main__"]
    with _starting:
        saved = {name: vars(main)[name] for name in ("__spec__", "__file__") if name in vars(main)}
        main.__spec__ = None
        vars(main).pop("__file__", None)
        try:
            process.start()
        finally:
            vars(main).update(saved)
            if "__spec__" not in saved:
                del main.__spec__


def ready() -> bool:
    """Whether a fork costs milliseconds now (else the caller may start a fresh process)."""
    return _ready


def ready_soon(timeout: float) -> bool:
    """Whether forks are cheap, waiting up to `timeout` seconds for a warm-up under way: a
    fresh interpreter started beside it would cost as much again on the same cores."""
    if _warming.is_set():
        _warmed.wait(timeout)
    return _ready
