"""A capture that overruns capture_timeout: where it was, read from its runner's stack dump
(activities/definition/stack_dump.py); the runner asked for the dump and killed with its group
(activities/processes/runner_process.py); the option itself."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from steward.activities.definition.capture import capture_timeout_of, overran
from steward.activities.definition.stack_dump import parse_dump, shown_path, where_it_was
from steward.activities.processes.runner_process import run_runner
from steward.activities.workspace.options import OptionsError, load_options
from steward.workflows.options import StewardOptions

SITE = "/venv/lib/python3.11/site-packages"
STDLIB = "/py/lib/python3.11"
LIBRARIES = [Path(SITE), Path(STDLIB)]

# What a forked capture runner writes on SIGUSR1: a helper thread, then the main thread.
FORKED_DUMP = f"""\
some warning the definition printed first
Thread 0x00007f70532fc6c0 (most recent call first):
  File "{STDLIB}/threading.py", line 320 in wait
  File "{STDLIB}/threading.py", line 1002 in _bootstrap

Current thread 0x00007f705403eb80 (most recent call first):
  File "{STDLIB}/socket.py", line 706 in readinto
  File "{SITE}/datasets/load.py", line 2132 in load_dataset
  File "/ws/data.py", line 4 in fetch
  File "evalset.py", line 9 in build
  File "evalset.py", line 12 in <module>
  File "<frozen runpy>", line 88 in _run_code
  File "<frozen runpy>", line 291 in run_path
  File "/src/steward/worker/definition_runner.py", line 209 in main
  File "/src/steward/activities/processes/worker_fork.py", line 58 in _task_worker
  File "{STDLIB}/multiprocessing/process.py", line 108 in run
"""


def _lines(**by_place: str):
    return lambda file, line: by_place.get(f"{Path(file).name}:{line}", "")


def test_parse_dump_reads_every_thread_and_skips_other_output():
    threads = parse_dump(FORKED_DUMP + "\nmore output after it\n")
    assert [t.current for t in threads] == [False, True]
    assert [(f.file, f.line, f.function) for f in threads[1].frames[3:5]] == [
        ("evalset.py", 9, "build"),
        ("evalset.py", 12, "<module>"),
    ]
    assert len(threads[1].frames) == 10
    assert parse_dump("no dump here\n") == []


def test_where_it_was_names_the_innermost_user_frame_its_source_and_how_it_got_there():
    where = where_it_was(
        FORKED_DUMP,
        "/ws",
        "evalset.py",
        source_line=_lines(**{"data.py:4": "    return load_dataset(NAME)\n"}),
        libraries=LIBRARIES,
    )
    assert where == (
        "data.py:4 in fetch (`return load_dataset(NAME)`), inside socket.py:706 in readinto, "
        "called from evalset.py:9 in build, from evalset.py:12 in <module>"
    )


def test_the_thread_running_the_definition_is_chosen_over_the_one_signalled():
    # The signal can land on a helper thread; the definition runs in the runner's thread.
    dump = textwrap.dedent(f"""\
        Thread 0x01 (most recent call first):
          File "/ws/evalset.py", line 3 in <module>
          File "/src/steward/worker/definition_runner.py", line 209 in main

        Current thread 0x02 (most recent call first):
          File "{STDLIB}/threading.py", line 320 in wait
        """)
    where = where_it_was(dump, "/ws", "evalset.py", source_line=_lines(), libraries=LIBRARIES)
    assert where == "evalset.py:3 in <module>"


def test_a_capture_that_never_reached_the_definition_names_where_it_was():
    dump = textwrap.dedent(f"""\
        Current thread 0x02 (most recent call first):
          File "{SITE}/inspect_ai/__init__.py", line 5 in <module>
          File "/src/steward/worker/definition_runner.py", line 60 in refuse_empty_task_list
        """)
    where = where_it_was(dump, "/ws", "evalset.py", source_line=_lines(), libraries=LIBRARIES)
    assert where == "inspect_ai/__init__.py:5 in <module>"
    assert where_it_was("", "/ws", "evalset.py", libraries=LIBRARIES) is None


def test_shown_paths_are_relative_to_the_workspace_or_their_library():
    assert shown_path("evalset.py", Path("/ws"), LIBRARIES) == "evalset.py"
    assert shown_path("/ws/sub/a.py", Path("/ws"), LIBRARIES) == "sub/a.py"
    assert shown_path(f"{SITE}/datasets/load.py", Path("/ws"), LIBRARIES) == "datasets/load.py"
    assert shown_path(f"{STDLIB}/socket.py", Path("/ws"), LIBRARIES) == "socket.py"
    assert shown_path("/elsewhere/x.py", Path("/ws"), LIBRARIES) == "/elsewhere/x.py"
    assert shown_path("<frozen runpy>", Path("/ws"), LIBRARIES) == "<frozen runpy>"


def test_the_sentence_says_the_limit_where_and_the_two_fixes(tmp_path: Path):
    (tmp_path / "evalset.py").write_text("import time\n\ntime.sleep(3600)\n")
    dump = (
        "Current thread 0x02 (most recent call first):\n"
        f'  File "evalset.py", line 3 in <module>\n'
        f'  File "{tmp_path}/runner/definition_runner.py", line 209 in main\n'
    )
    sentence = overran("evalset.py", str(tmp_path), 180, dump)
    assert sentence == (
        "The definition evalset.py did not finish resolving its tasks within 3m "
        "(capture_timeout); it was at evalset.py:3 in <module> (`time.sleep(3600)`). Fix the "
        "definition (it should do no slow work before calling eval_set()), or raise "
        "capture_timeout (now 3m) if it needs longer."
    )
    assert "its stack could not be read" in overran("evalset.py", str(tmp_path), 5, "")


HANGS_WITH_A_CHILD = """\
import faulthandler, signal, subprocess, sys, time
faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
subprocess.Popen(["sleep", "3600"])
print("started", flush=True)
time.sleep(3600)
"""


def test_an_overrunning_runner_is_asked_for_its_stack_then_killed_with_its_group(tmp_path):
    script = tmp_path / "hangs.py"
    script.write_text(HANGS_WITH_A_CHILD)
    stdout, stderr = tmp_path / "out", tmp_path / "err"
    started = time.monotonic()
    code = run_runner(
        [sys.executable, str(script)], {}, str(tmp_path), stdout, stderr, 2.0, dump_stack=True
    )
    assert code is None and time.monotonic() - started < 10
    dump = stderr.read_text()
    assert f'File "{script}", line 5 in <module>' in dump, dump
    assert "started" in stdout.read_text()
    left = []
    for process in psutil.process_iter(["pid"]):
        try:
            if Path(process.cwd()) == tmp_path and process.status() != psutil.STATUS_ZOMBIE:
                left.append(process.pid)
        except (psutil.Error, OSError):
            pass
    assert left == []  # the runner and the child it started


def test_a_runner_that_ends_in_time_is_not_signalled(tmp_path):
    stdout, stderr = tmp_path / "out", tmp_path / "err"
    command = [sys.executable, "-c", "print('done')"]
    assert run_runner(command, {}, str(tmp_path), stdout, stderr, 30, dump_stack=True) == 0
    assert stdout.read_text() == "done\n" and stderr.read_text() == ""


def test_capture_timeout_defaults_to_five_minutes_and_needs_a_second(tmp_path, monkeypatch):
    monkeypatch.delenv("STEWARD_CAPTURE_TIMEOUT", raising=False)
    assert StewardOptions().capture_timeout == 300
    assert capture_timeout_of(str(tmp_path)) == 300  # no _steward.yaml: the default
    (tmp_path / "_steward.yaml").write_text("capture_timeout: 20s\n")
    assert load_options(tmp_path).capture_timeout == 20 == capture_timeout_of(str(tmp_path))
    (tmp_path / "_steward.yaml").write_text("capture_timeout: 0s\n")
    with pytest.raises(OptionsError, match="capture_timeout.*at least 1s"):
        load_options(tmp_path)
    assert capture_timeout_of(str(tmp_path)) == 300  # the worker's read falls back
