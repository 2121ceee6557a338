"""The scoring-integrity scan: real Inspect logs from the offline model, scanned by inspect_scout
in this process (the activity's child process is in tests/integration/test_scan_activity.py).

The offline model judges a scanner prompt by `STEWARD_OFFLINE_FLAG` (a regex over the transcript
in the prompt), so which sample is flagged is chosen by each test, not baked into the model.
The log (fixture `eval_log`) and the scanners are in harness/scanning.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.scanning import EXPLODES, SAYS_BETA, TASK, WORDS
from steward.activities.scan.scout_scan import SCORING_INTEGRITY, ScanFailed, scan_transcripts
from steward.worker.offline_model import scanner_verdict

pytestmark = pytest.mark.usefixtures("no_offline_knobs")


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


def test_scan_model_resolution_follows_the_seed(tmp_path, monkeypatch):
    from steward.activities.scan.scout_scan import resolve_scan_model

    monkeypatch.delenv("SCOUT_SCAN_MODEL", raising=False)
    (tmp_path / ".env").write_text("SCOUT_SCAN_MODEL=steward/judge\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert resolve_scan_model("steward/named", str(workspace)) == "steward/named"
    assert resolve_scan_model(None, str(workspace)) == "steward/judge"  # from a parent's .env
    assert resolve_scan_model(False, str(workspace)) is None  # false: the eval model
    monkeypatch.setenv("SCOUT_SCAN_MODEL", "steward/env")
    assert resolve_scan_model(None, str(workspace)) == "steward/env"


def test_shards_of_one_log_scan_each_transcript_exactly_once(
    eval_log: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("STEWARD_OFFLINE_FLAG", r"\bgamma\b")
    seen, found = [], []
    for index in range(2):
        results_dir = tmp_path / f"part-{index}"
        found += scan_transcripts(
            [eval_log], str(results_dir), "steward/offline", [], shard=(index, 2)
        )
        seen.append(set(_scanned_values(results_dir, SCORING_INTEGRITY)))
    assert seen[0] and seen[1] and not seen[0] & seen[1]
    assert seen[0] | seen[1] == set(WORDS)
    assert [f["sample_id"] for f in found] == ["gamma"]


def test_a_scan_of_logs_that_do_not_split_evenly_is_split_by_transcript(tmp_path, monkeypatch):
    from steward.activities.scan import scan_parts

    monkeypatch.setattr(scan_parts.os, "cpu_count", lambda: 2)
    large = tmp_path / "large.eval"
    large.write_bytes(b"x" * scan_parts.SHARD_MIN_BYTES)
    small = tmp_path / "small.eval"
    small.write_bytes(b"x" * 100)
    assert scan_parts.plan_parts([str(large)]) == [([str(large)], (0, 2)), ([str(large)], (1, 2))]
    assert scan_parts.plan_parts([str(small)]) == [([str(small)], None)]  # not worth a process
    both = [str(large), str(small)]  # one process would have nearly all the work
    assert scan_parts.plan_parts(both) == [(both, (0, 2)), (both, (1, 2))]
    even = []  # equal logs: one process each (three on two cores, not one with two logs)
    for name in "abcd":
        (tmp_path / f"{name}.eval").write_bytes(b"x" * scan_parts.SHARD_MIN_BYTES)
        even.append(str(tmp_path / f"{name}.eval"))
    assert sorted(scan_parts.plan_parts(even[:3])) == [([p], None) for p in even[:3]]
    assert sorted(scan_parts.plan_parts(even)) == [([p], None) for p in even]
    (tmp_path / "e.eval").write_bytes(b"x" * scan_parts.SHARD_MIN_BYTES)
    five = [*even, str(tmp_path / "e.eval")]  # four processes at most: one would have two
    assert scan_parts.plan_parts(five) == [(five, (0, 2)), (five, (1, 2))]


def test_a_scan_is_split_across_processes_by_log_size(tmp_path, monkeypatch):
    from steward.activities.scan import scan_parts as scan_module

    sizes = {"a": 900, "b": 500, "c": 400, "d": 100}
    paths = []
    for name, size in sizes.items():
        path = tmp_path / f"{name}.eval"
        path.write_bytes(b"x" * size)
        paths.append(str(path))
    parts = scan_module.split_logs(paths, 2)
    assert sorted(sorted(p) for p in parts) == sorted(
        [sorted([paths[0], paths[3]]), sorted([paths[1], paths[2]])]
    )  # 1000 and 900 bytes
    assert scan_module.split_logs(paths[:1], 3) == [paths[:1]]  # never an empty part
    monkeypatch.setattr(scan_module.os, "cpu_count", lambda: 2)
    assert [scan_module.scan_processes(n) for n in (0, 1, 2, 5)] == [1, 1, 2, 2]
    monkeypatch.setattr(scan_module.os, "cpu_count", lambda: 16)
    assert scan_module.scan_processes(40) == scan_module.MAX_SCAN_PROCESSES
