"""The scan activity: scout in a child process, resolving paths against the workspace (the scan
itself, in this process, is in tests/unit/test_scan.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from harness.scanning import SAYS_BETA
from steward.activities.scan.scan import scan_transcripts_activity
from steward.activities.scan.scout_scan import SCORING_INTEGRITY

pytestmark = pytest.mark.usefixtures("no_offline_knobs")


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
