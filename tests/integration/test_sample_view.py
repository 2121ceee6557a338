"""`steward show`'s reading of one sample (worker/sample_view.py) against a real Inspect log:
an errored sample's error and traceback tail, its transcript's tail, a scored sample's scores,
and a sample that is not there refused naming the ids that are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from steward.activities.logs.log_listing import logs_by_identifier
from steward.worker.sample_view import Refused, sample_view

SCRIPT = textwrap.dedent(
    """
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    task = Task(
        name="chat",
        dataset=[Sample(id=i, input=f"Reply with: w{i}", target=f"w{i}") for i in range(1, 5)],
        solver=generate(),
        scorer=match(),
    )
    eval(task, model="steward/offline", log_dir="logs", display="none", fail_on_error=False)
    """
)


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sample-view")
    (root / "run.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_OFFLINE")}
    env["STEWARD_OFFLINE_FAIL"] = "w3$"
    done = subprocess.run(
        [sys.executable, "run.py"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return root / "logs"


def request(log_dir: Path, sample_id: str, epoch: int | None = None) -> dict:
    (identifier,) = logs_by_identifier(str(log_dir))
    return {
        "log_dir": str(log_dir),
        "identifier": identifier,
        "task": "chat",
        "sample_id": sample_id,
        "epoch": epoch,
        "messages": 4,
    }


def test_an_errored_sample_shows_its_error_traceback_tail_and_transcript(log_dir):
    view = sample_view(request(log_dir, "3"))
    assert view["status"] == "error" and view["epoch"] == 1 and view["newest_log"]
    assert "OfflineSampleFailure" in view["error"]["message"] or "w3" in view["error"]["message"]
    tail = view["error"]["traceback_tail"]
    assert 0 < len(tail) <= 15 and "offline_model.py" in "\n".join(tail)
    assert [m["role"] for m in view["transcript_tail"]] == ["user"]
    assert view["transcript_tail"][0]["text"] == "Reply with: w3"
    assert view["scores"] == {}
    assert set(view) >= {
        "task", "sample_id", "epoch", "epochs", "uuid", "log", "log_status", "status",
        "error", "retries", "scores", "messages_total", "transcript_tail",
    }  # fmt: skip


def test_a_healthy_sample_shows_its_score_and_answer(log_dir):
    view = sample_view(request(log_dir, "2", epoch=1))
    assert view["status"] == "ok" and view["error"] is None
    assert view["scores"]["match"]["value"] == "C" and view["scores"]["match"]["answer"] == "w2"
    assert [m["role"] for m in view["transcript_tail"]] == ["user", "assistant"]


def test_a_sample_that_is_not_there_is_refused_naming_the_ids_that_are(log_dir):
    with pytest.raises(
        Refused, match=r"No sample 9 in chat's logs; .* holds sample ids 1, 2, 3, 4"
    ):
        sample_view(request(log_dir, "9"))
    with pytest.raises(Refused, match=r"No sample 2 \(epoch 3\)"):
        sample_view(request(log_dir, "2", epoch=3))


def test_the_module_prints_one_document_and_exits_2_on_a_refusal(log_dir):
    def run(sample_id: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "steward.worker.sample_view",
                json.dumps(request(log_dir, sample_id)),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )

    shown, refused = run("3"), run("9")
    assert shown.returncode == 0 and json.loads(shown.stdout)["sample_id"] == "3"
    assert refused.returncode == 2 and "No sample 9" in json.loads(refused.stdout)["problem"]
