"""Inspect Flow configurations run through the same per-task workers (resolved as Flow resolves
them, so Flow itself finds the run's logs complete), and a Flow store serves reuse and
`signoff --publish` exactly as a directory of .eval files does."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.helpers import Steward, read_logs, tasks_by_name
from steward.worker.flow_config import is_flow_config

CONFIG = """from inspect_flow import FlowOptions, FlowSpec, FlowTask

FlowSpec(
    options=FlowOptions(max_samples=4),
    tasks=[
        FlowTask(name="tasks.py@echo_words", model="steward/offline", args={"count": 3}),
        FlowTask(name="tasks.py@echo_codes", model="steward/offline", args={"count": 2}, epochs=2),
    ],
)
"""
WORDS, CODES = "tasks.py@echo_words", "tasks.py@echo_codes"


def _flow_workspace(steward: Steward, directory: Path, options: str) -> Path:
    created = steward.ok("init", "--type", "flow", str(directory))
    assert {"config.py", "tasks.py"} <= set(created["files"]) and "evalset.py" not in created[
        "files"
    ]
    (directory / "config.py").write_text(CONFIG)  # the template's tasks, fewer samples
    with open(directory / "_steward.yaml", "a") as handle:
        handle.write("\ntend_interval: 2s\nmax_workers: 1\n" + options)
    return directory


def test_detection_tells_flow_configs_from_eval_set_scripts(tmp_path):
    flow = tmp_path / "config.py"
    flow.write_text(CONFIG)
    script = tmp_path / "evalset.py"
    script.write_text(
        "from inspect_flow import FlowTask\nfrom inspect_ai import eval_set\neval_set([])\n"
    )
    commented = tmp_path / "commented.py"
    commented.write_text('"""Not eval_set() here."""\n# nor eval_set(tasks)\n' + CONFIG)
    assert is_flow_config(flow) and is_flow_config(commented) and not is_flow_config(script)
    assert not is_flow_config(tmp_path / "missing.py")


def test_a_flow_config_runs_and_its_published_logs_are_reused_from_a_flow_store(
    steward: Steward, workspace_root
):
    store = workspace_root / "flow-store"
    first = _flow_workspace(steward, workspace_root / "one", f"log_store: flow:{store}\n")

    launched = steward.ok("launch", cwd=first)  # config.py is the workspace's default definition
    specs = [t["spec"] for t in launched["state"]["tasks"]]
    assert {s["name"]: (s["samples"], s["epochs"]) for s in specs} == {WORDS: (3, 1), CODES: (2, 2)}
    steward.wait_phase(first, {"finished"}, tend=True)
    samples = read_logs(first / "logs")
    assert {task: sorted(ids) for task, ids in samples.items()} == {
        WORDS: [(1, 1), (2, 1), (3, 1)],
        CODES: [(1, 1), (1, 2), (2, 1), (2, 2)],
    }

    # Flow itself, given the same config, finds every task complete in Steward's logs.
    from inspect_flow import api

    api.init(display="none", dotenv_base_dir=None)
    spec = api.load_spec(str(first / "config.py"))
    checked = api.check(spec, base_dir=str(first), log_dir=str(first / "logs"))
    assert checked.is_complete and len(checked.tasks) == 2 and not checked.unrecognized

    # Publishing indexes the final logs in the Flow store, read back through Flow's own API.
    signed = steward.ok("signoff", "--by", "norah", "--publish", cwd=first)
    published = sorted(signed["published"])
    assert len(published) == 2
    indexed = sorted(
        Path(uri.removeprefix("file://"))
        for uri in api.store_get(str(store), create=False).get_logs()
    )
    assert indexed == sorted(Path(p) for p in published)

    # A second workspace with the same config and the store (named by its directory, as
    # Flow names it) runs nothing: both tasks come from the store.
    second = _flow_workspace(steward, workspace_root / "two", f"log_store: {store}\n")
    shutil.copy(first / "config.py", second / "config.py")
    launched = steward.ok("launch", cwd=second)
    assert sorted(launched["store_hits"]) == [CODES, WORDS]
    done = tasks_by_name(steward.wait_phase(second, {"finished"}, tend=True))
    assert {name: t["attempts"] for name, t in done.items()} == {WORDS: 0, CODES: 0}
    assert sorted(steward.status(second)["state"]["reused"]) == [CODES, WORDS]


def test_a_broken_flow_config_or_a_missing_extra_is_one_clear_sentence(
    steward: Steward, workspace_root, monkeypatch
):
    workspace = workspace_root / "template"
    steward.ok("init", "--type", "flow", str(workspace))
    template = steward.ok("tasks", cwd=workspace)  # the template resolves as written
    assert {t["name"] for t in template["tasks"]} == {WORDS, CODES}

    (workspace / "config.py").write_text(CONFIG.replace("echo_codes", "no_such_task"))
    result = steward("tasks", cwd=workspace)
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "Task named 'no_such_task' not found" in result.stderr

    import sys

    from steward.activities.logs import log_store

    monkeypatch.setitem(sys.modules, "inspect_flow", None)  # as if the extra were not installed
    from steward.worker import flow_config

    try:
        flow_config.run(workspace / "config.py")
    except SystemExit as exit:
        assert "pip install 'steward-evals[flow]'" in str(exit.code)
    else:
        raise AssertionError("a Flow config ran without inspect-flow")
    try:
        log_store.index_store(f"flow:{workspace_root / 'store'}")
    except ValueError as err:
        assert "pip install 'steward-evals[flow]'" in str(err)
    else:
        raise AssertionError("a Flow store without inspect-flow was indexed")
