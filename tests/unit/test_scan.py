"""The scoring-integrity scan: real Inspect logs from the offline model, scanned by inspect_scout.

The offline model judges a scanner prompt by `STEWARD_OFFLINE_FLAG` (a regex over the transcript
in the prompt), so which sample is flagged is chosen by each test, not baked into the model.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from activities.scan import (
    SCORING_INTEGRITY,
    ScanFailed,
    scan_transcripts,
    scan_transcripts_activity,
)
from worker.offline_model import scanner_verdict

WORDS = ["alpha", "beta", "gamma"]
TASK = "integrity_probe"

# A plain (non-LLM) scanner: flags a sample whose last message says "beta".
SAYS_BETA = textwrap.dedent(
    """
    from inspect_scout import Result, Scanner, Transcript, scanner


    @scanner(messages="all")
    def {name}() -> Scanner[Transcript]:
        async def scan(transcript: Transcript) -> Result:
            last = transcript.messages[-1].text if transcript.messages else ""
            return Result(value="beta" in last, explanation=f"The last message is {{last!r}}.")

        return scan
    """
)

EXPLODES = textwrap.dedent(
    """
    from inspect_scout import Result, Scanner, Transcript, scanner


    @scanner(messages="all")
    def explodes() -> Scanner[Transcript]:
        async def scan(transcript: Transcript) -> Result:
            raise RuntimeError("scanner exploded on purpose")

        return scan
    """
)


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One real `.eval` log: three samples the offline model answers, all scored correct."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    log_dir = tmp_path_factory.mktemp("logs")
    task = Task(
        name=TASK,
        dataset=[Sample(id=word, input=f"Reply with: {word}", target=word) for word in WORDS],
        solver=generate(),
        scorer=match(),
    )
    (log,) = eval(task, model="steward/offline", log_dir=str(log_dir), display="none")
    assert log.status == "success" and log.results.scores[0].metrics["accuracy"].value == 1.0
    (path,) = log_dir.glob("*.eval")
    return str(path)


@pytest.fixture(autouse=True)
def no_offline_knobs(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STEWARD_OFFLINE_FLAG", "STEWARD_OFFLINE_FAIL", "STEWARD_OFFLINE_CRASH"):
        monkeypatch.delenv(name, raising=False)


def _scanned_values(results_dir: Path, scanner: str) -> dict[str, object]:
    """Every result a scanner recorded under results_dir, by sample id (positive or not)."""
    from inspect_scout import scan_results_df

    (location,) = results_dir.glob("scan_id=*")
    frame = scan_results_df(str(location), scanner=scanner).scanners[scanner]
    return dict(zip(frame["transcript_task_id"], frame["value"], strict=True))


def test_flags_exactly_the_sample_whose_transcript_matches(
    eval_log: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("STEWARD_OFFLINE_FLAG", r"\bgamma\b")
    # An explicit scan model must win over scout's environment default (mockllm never flags).
    monkeypatch.setenv("SCOUT_SCAN_MODEL", "mockllm/model")
    results_dir = tmp_path / "scans"

    findings = scan_transcripts([eval_log], str(results_dir), "steward/offline", [])

    assert len(findings) == 1
    (finding,) = findings
    explanation = finding.pop("explanation")
    assert finding == {
        "scanner": SCORING_INTEGRITY,
        "log": eval_log,
        "task": TASK,
        "sample_id": "gamma",
        "epoch": 1,
        "value": True,
    }
    assert "gamma" in explanation and "[M" in explanation
    assert _scanned_values(results_dir, SCORING_INTEGRITY) == {
        "alpha": False,
        "beta": False,
        "gamma": True,
    }


def test_no_match_means_no_findings_although_every_sample_was_judged(
    eval_log: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("STEWARD_OFFLINE_FLAG", "delta")
    results_dir = tmp_path / "scans"

    assert scan_transcripts([eval_log], str(results_dir), "steward/offline", []) == []
    assert _scanned_values(results_dir, SCORING_INTEGRITY) == {word: False for word in WORDS}


def test_an_extra_scanner_from_a_file_reports_under_its_own_name(
    eval_log: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "beta_check.py").write_text(SAYS_BETA.format(name="says_beta"))
    monkeypatch.chdir(tmp_path)  # the spec is relative to the working directory

    findings = scan_transcripts(
        [eval_log], str(tmp_path / "scans"), "steward/offline", ["checks/beta_check.py@says_beta"]
    )

    assert [(f["scanner"], f["sample_id"], f["value"]) for f in findings] == [
        ("says_beta", "beta", True)
    ]
    assert findings[0]["explanation"] == "The last message is 'beta'."
    assert findings[0]["log"] == eval_log and findings[0]["task"] == TASK


@pytest.mark.parametrize(
    "spec",
    ["missing.py@says_beta", "checks/beta_check.py@no_such_scanner", "no_such_registered_scanner"],
)
def test_a_bad_scanner_spec_is_a_value_error_naming_it(eval_log: str, tmp_path: Path, spec: str):
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "beta_check.py").write_text(SAYS_BETA.format(name="beta_for_errors"))

    with pytest.raises(ValueError, match=re.escape(repr(spec))):
        scan_transcripts([eval_log], str(tmp_path / "scans"), None, [spec], cwd=str(tmp_path))
    assert not list((tmp_path / "scans").glob("scan_id=*"))  # refused before scanning


def test_a_scanner_that_errors_fails_the_scan(eval_log: str, tmp_path: Path):
    (tmp_path / "explodes.py").write_text(EXPLODES)

    with pytest.raises(ScanFailed, match="scanner exploded on purpose"):
        scan_transcripts(
            [eval_log],
            str(tmp_path / "scans"),
            "steward/offline",
            ["explodes.py@explodes"],
            cwd=str(tmp_path),
        )


def test_the_flag_knob_leaves_ordinary_prompts_alone():
    assert scanner_verdict("Reply with: gamma", "gamma") is None


async def test_the_activity_scans_in_a_child_resolving_paths_against_cwd(
    eval_log: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("STEWARD_OFFLINE_FLAG", r"\balpha\b")  # the child inherits it
    (tmp_path / "logs").mkdir()
    shutil.copy(eval_log, tmp_path / "logs")
    log = f"logs/{Path(eval_log).name}"
    (tmp_path / "beta_check.py").write_text(SAYS_BETA.format(name="beta_in_child"))

    findings = await scan_transcripts_activity(
        {
            "log_paths": [log],
            "results_dir": "scans",
            "scan_model": None,  # the log's own eval model: steward/offline
            "scanners": ["beta_check.py@beta_in_child"],
            "cwd": str(tmp_path),
        }
    )

    assert [(f["scanner"], f["sample_id"], f["log"]) for f in findings] == [
        (SCORING_INTEGRITY, "alpha", log),
        ("beta_in_child", "beta", log),
    ]
    assert list((tmp_path / "scans").glob("scan_id=*"))


async def test_the_activity_refuses_a_bad_spec_for_good(eval_log: str, tmp_path: Path):
    with pytest.raises(ApplicationError) as refused:
        await scan_transcripts_activity(
            {
                "log_paths": [eval_log],
                "results_dir": str(tmp_path / "scans"),
                "scan_model": "steward/offline",
                "scanners": ["nowhere.py@nothing"],
                "cwd": str(tmp_path),
            }
        )
    assert refused.value.type == "ScanRequestError" and refused.value.non_retryable
    assert "'nowhere.py@nothing'" in str(refused.value)


def test_scan_model_resolution_follows_the_seed(tmp_path, monkeypatch):
    from activities.scan import resolve_scan_model

    monkeypatch.delenv("SCOUT_SCAN_MODEL", raising=False)
    (tmp_path / ".env").write_text("SCOUT_SCAN_MODEL=steward/judge\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert resolve_scan_model("steward/named", str(workspace)) == "steward/named"
    assert resolve_scan_model(None, str(workspace)) == "steward/judge"  # from a parent's .env
    assert resolve_scan_model(False, str(workspace)) is None  # false: the eval model
    monkeypatch.setenv("SCOUT_SCAN_MODEL", "steward/env")
    assert resolve_scan_model(None, str(workspace)) == "steward/env"
