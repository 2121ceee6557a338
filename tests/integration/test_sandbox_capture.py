"""Capture sizes each task's sandbox: the real definition runner in a child process (no Docker
is started); the sizing itself is in tests/unit/test_sandbox_size.py."""

from __future__ import annotations

from harness.helpers import DEFINITION_HEAD
from harness.sandboxes import TWO_SERVICES, write_dedented

CAPTURED_TASKS = """
@task
def boxed():
    return Task(dataset=samples("boxed", 3), solver=generate(), scorer=match(),
                sandbox=("docker", "compose.yaml"))


@task
def per_sample():
    return Task(
        dataset=[Sample(input="x", target="x", sandbox=("docker", "env/compose.yaml"))],
        solver=generate(), scorer=match(),
    )


@task
def bare():
    return Task(dataset=samples("bare", 2), solver=generate(), scorer=match())


eval_set(tasks=[boxed(), per_sample(), bare()], model="steward/offline", log_dir="logs")
"""


def test_capture_sizes_each_tasks_sandbox(tmp_path):
    """The real capture (no Docker is started): the runner records each task's sandbox spec
    and capture sizes it from the compose file beside the definition."""
    from steward.activities.definition.capture import capture_definition_sync

    write_dedented(tmp_path / "compose.yaml", TWO_SERVICES)
    write_dedented(tmp_path / "env" / "compose.yaml", "services:\n  default: {image: x, cpus: 2}\n")
    (tmp_path / "evalset.py").write_text(DEFINITION_HEAD + CAPTURED_TASKS)

    capture = capture_definition_sync(str(tmp_path), "evalset.py")

    tasks = {t.name: t for t in capture.tasks}
    assert tasks["boxed"].sandbox == "docker"
    assert tasks["boxed"].sandbox_size.sandboxes == 2
    assert tasks["boxed"].sandbox_size.source == str((tmp_path / "compose.yaml").resolve())
    assert tasks["per_sample"].sandbox == "docker"
    assert tasks["per_sample"].sandbox_size.cpu == 2.0
    assert tasks["bare"].sandbox is None and tasks["bare"].sandbox_size is None
