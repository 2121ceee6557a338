"""The scoring-integrity scan with the provider simulator as the scan model, offline.

A real Inspect eval runs against the simulator (model `openai-api/sim/echo`, Inspect's real
openai-api provider); then Steward's scan activity scans its log in the forked child, as a run's
scan does. Inspect's openai provider counts the scanner's tokens with tiktoken's `o200k_base`,
which tiktoken would download: every HTTP(S) proxy variable points at a closed port (loopback
excepted, for the simulator), so any download fails the scan. The child finds the encoding in
the cache that activities/processes/tiktoken_offline.py fills from a package, under a data directory of
this test's own. The simulator's flag rate (and regex) decide which samples are flagged; that
a verdict is the same scan after scan is in tests/unit/test_provider_simulator_scan.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from harness.scanning import WORDS
from steward.activities.processes.tiktoken_offline import (
    ENCODINGS,
    cache_file_name,
    provide_encodings,
)
from steward.activities.scan.scan import scan_transcripts_activity
from steward.activities.scan.scout_scan import SCORING_INTEGRITY, ScanFailed, scan_transcripts

pytestmark = pytest.mark.usefixtures("no_offline_knobs")

SIM_MODEL = "openai-api/sim/echo"
NO_NETWORK = "http://127.0.0.1:9"  # nothing listens there: a proxied request fails at once
PROXIES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]


def _offline_env(monkeypatch: pytest.MonkeyPatch, simulator: str, data_dir: Path) -> None:
    monkeypatch.setenv("SIM_BASE_URL", f"{simulator}/v1")
    monkeypatch.setenv("SIM_API_KEY", "test-key")
    for name in PROXIES:
        monkeypatch.setenv(name, NO_NETWORK)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("STEWARD_DATA_DIR", str(data_dir))
    for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "SCOUT_SCAN_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def simulator(tmp_path_factory: pytest.TempPathFactory):
    from steward.worker.provider_simulator import spawn

    process, url = spawn(
        tmp_path_factory.mktemp("sim") / "sim.port", latency=0.0, jitter=0.0, concurrency=0
    )
    yield url
    process.kill()
    process.wait()


@pytest.fixture(scope="module")
def sim_log(simulator: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real `.eval` log of the simulator's echo model: three samples (WORDS), all correct."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    log_dir = tmp_path_factory.mktemp("sim-logs")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _offline_env(monkeypatch, simulator, tmp_path_factory.mktemp("eval-data"))
        task = Task(
            name="sim_probe",
            dataset=[Sample(id=word, input=f"Reply with: {word}", target=word) for word in WORDS],
            solver=generate(),
            scorer=match(),
        )
        (log,) = eval(task, model=SIM_MODEL, log_dir=str(log_dir), display="none")
    assert log.status == "success" and log.results.scores[0].metrics["accuracy"].value == 1.0
    (path,) = log_dir.glob("*.eval")
    return str(path)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, simulator: str, tmp_path: Path) -> Path:
    """This test's environment (the scan child inherits it): the simulator, no network, and a
    data directory of its own, empty. Returns where the encodings must end up."""
    _offline_env(monkeypatch, simulator, tmp_path / "data")
    return tmp_path / "data" / "tiktoken"


def _configure(simulator: str, **settings: object) -> None:
    response = httpx.post(f"{simulator}/admin/config", json=settings)
    assert response.status_code == 200, response.text


def _scanned(simulator: str) -> int:
    return httpx.get(f"{simulator}/admin/stats").json()["scanned"]


def _request(log: str, results: Path, cwd: Path, **extra: object) -> dict:
    """A scan request for one log, the simulator judging."""
    return {
        "log_paths": [log],
        "results_dir": str(results),
        "scan_model": SIM_MODEL,
        "scanners": [],
        "cwd": str(cwd),
        **extra,
    }


async def _scan(sim_log: str, tmp_path: Path, name: str) -> list[dict]:
    """Steward's scan activity (the forked child) on the log, the simulator judging."""
    return await scan_transcripts_activity(_request(sim_log, tmp_path / name, tmp_path))


def test_without_the_encoding_the_scan_would_download_it(
    sim_log: str, simulator: str, offline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The control: the scan does need o200k_base, and the proxies stop its download. (In this
    process, so without the child's setup; an empty cache directory of its own.)"""
    import tiktoken.registry

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # none loaded in this process yet
    with pytest.raises(ScanFailed, match=r"o200k_base\.tiktoken"):
        scan_transcripts([sim_log], str(tmp_path / "scans"), SIM_MODEL, [])
    assert not any((tmp_path / "empty-cache").glob("*"))


async def test_rate_zero_flags_nothing_and_rate_one_flags_every_sample(
    sim_log: str, simulator: str, offline: Path, tmp_path: Path
):
    _configure(simulator, scan_flag_rate=0.0, scan_flag=None)
    before = _scanned(simulator)
    assert await _scan(sim_log, tmp_path, "rate-0") == []
    assert _scanned(simulator) - before == len(WORDS)  # every sample judged, none flagged

    # The child found the encodings offline, where Steward put them from the package.
    assert sorted(p.name for p in offline.iterdir()) == sorted(map(cache_file_name, ENCODINGS))
    assert "TIKTOKEN_CACHE_DIR" not in os.environ  # the child's setting, not this process's

    _configure(simulator, scan_flag_rate=1.0)
    findings = await _scan(sim_log, tmp_path, "rate-1")
    assert [(f["scanner"], f["sample_id"], f["value"]) for f in findings] == [
        (SCORING_INTEGRITY, word, True) for word in sorted(WORDS)
    ]
    assert all(f["explanation"].startswith("Simulated verdict: flagged") for f in findings)


async def test_a_flag_regex_picks_the_samples_whose_transcript_matches(
    sim_log: str, simulator: str, offline: Path, tmp_path: Path
):
    _configure(simulator, scan_flag_rate=1.0, scan_flag=r"\bbeta\b")  # the regex wins
    findings = await _scan(sim_log, tmp_path, "regex")
    assert [f["sample_id"] for f in findings] == ["beta"]
    assert "[M" in findings[0]["explanation"]  # the offline model's wording: where it matched


def test_the_packaged_encodings_load_in_tiktoken_from_a_cache_directory_already_chosen(
    offline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import tiktoken.registry

    chosen = tmp_path / "chosen-cache"
    env = {"TIKTOKEN_CACHE_DIR": str(chosen), "STEWARD_DATA_DIR": str(tmp_path / "data")}
    assert provide_encodings(env) == chosen and env["TIKTOKEN_CACHE_DIR"] == str(chosen)
    assert not offline.exists()  # the chosen directory was honoured, Steward's left alone

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(chosen))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    o200k, cl100k = tiktoken.get_encoding("o200k_base"), tiktoken.get_encoding("cl100k_base")
    assert o200k.encode("hello world") == [24912, 2375]
    assert cl100k.encode("hello world") == [15339, 1917]
    assert o200k.decode(o200k.encode("Steward signs off ✓")) == "Steward signs off ✓"


async def _sim_log_of(samples: int, tmp_path: Path):
    """A real log of `samples` samples of the simulator's echo model (the module's simulator)."""
    from inspect_ai import Task, eval_async
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    words = [f"w{i}" for i in range(samples)]
    task = Task(
        name=f"echo{samples}",
        dataset=[Sample(id=w, input=f"Reply with: {w}", target=w) for w in words],
        solver=generate(),
        scorer=match(),
    )
    (log,) = await eval_async(task, model=SIM_MODEL, log_dir=str(tmp_path / "logs"))
    return log


def _narrow_simulator(tmp_path: Path, concurrency: int, latency: float):
    """A simulator of its own that admits `concurrency` in flight (429 beyond), none flagged."""
    from steward.worker.provider_simulator import spawn

    return spawn(
        tmp_path / f"narrow-{concurrency}.port", latency=latency, jitter=0.0,
        concurrency=concurrency, retry_after=1, scan_flag_rate=0.0,
    )  # fmt: skip


async def _scan_following(
    log: str, tmp_path: Path, connections: Path, first: int, ceiling: int
) -> tuple[dict | None, str]:
    """A scan part's child on `log` (as a run's scan runs it), starting at `first` connections
    and following its `connections` file up to `ceiling`; its answer and its last line."""
    from steward.activities.scan.scan_children import respond
    from steward.activities.scan.scan_process import run_in_child

    request = _request(
        log,
        tmp_path / "scan",
        tmp_path,
        max_connections=first,
        connections_ceiling=ceiling,
        connections_file=str(connections),
    )
    return await run_in_child(respond, request, tmp_path / "scan", lambda: None, 1.0)


async def test_a_scan_keeps_more_transcripts_than_connections_but_only_its_connections_out(
    simulator: str, offline: Path, tmp_path: Path
):
    """The scan works on transcripts_in_flight(n) transcripts at once, yet the provider sees at
    most n of its prompts: a simulator that admits exactly 2 in flight answers all 12 without a
    single 429, and sees 2 at once (the activity's path: its forked parts share the 2)."""
    from steward.activities.scan.scout_scan import transcripts_in_flight

    assert transcripts_in_flight(2) == 3 and transcripts_in_flight(None) is None
    log = await _sim_log_of(12, tmp_path)
    narrow, url = _narrow_simulator(tmp_path, concurrency=2, latency=0.3)
    try:
        os.environ["SIM_BASE_URL"] = f"{url}/v1"  # monkeypatched by `offline`: restored after
        await scan_transcripts_activity(
            _request(log.location, tmp_path / "scans", tmp_path, max_connections=2)
        )
        stats = httpx.get(f"{url}/admin/stats").json()
    finally:
        narrow.kill()
        narrow.wait()
    assert (stats["scanned"], stats["rate_limited"], stats["peak_in_flight"]) == (12, 0, 2)


async def test_a_running_scan_widens_when_its_connections_file_says_so(
    simulator: str, offline: Path, tmp_path: Path
):
    """The scan child (scan-widen-v1) starts at the connections it was given and resizes
    Inspect's connection semaphore when its file says more: a simulator that admits 4 in flight
    first sees 1 at a time, then 4, never a 429."""
    import asyncio
    import threading
    import time

    from steward.activities.logs.paths import write_atomic

    words = [f"w{i}" for i in range(24)]
    log = await _sim_log_of(len(words), tmp_path)
    narrow, url = _narrow_simulator(tmp_path, concurrency=4, latency=0.4)
    connections = tmp_path / "scan" / "connections"
    connections.parent.mkdir()
    write_atomic(connections, "1\n")
    peaks: list[int] = []

    def watch_then_widen() -> None:
        with httpx.Client() as client:
            started = time.monotonic()
            while time.monotonic() - started < 30:
                stats = client.get(f"{url}/admin/stats").json()
                peaks.append(stats["in_flight"])
                if stats["scanned"] >= 6 and connections.read_text() == "1\n":
                    peaks.append(-1)  # the mark: what came before was the narrow scan
                    write_atomic(connections, "4\n")
                if stats["scanned"] >= len(words):
                    return
                time.sleep(0.05)

    watcher = threading.Thread(target=watch_then_widen)
    try:
        os.environ["SIM_BASE_URL"] = f"{url}/v1"  # monkeypatched by `offline`: restored after
        watcher.start()
        answer, last = await _scan_following(log.location, tmp_path, connections, 1, 4)
        await asyncio.to_thread(watcher.join, 30)
        stats = httpx.get(f"{url}/admin/stats").json()
    finally:
        narrow.kill()
        narrow.wait()
    assert answer == {"findings": []}, last
    mark = peaks.index(-1)
    assert max(peaks[:mark]) == 1  # narrow: one connection
    assert max(peaks[mark + 1 :]) == 4  # widened while it ran
    assert (stats["scanned"], stats["rate_limited"]) == (len(words), 0)


async def test_a_scan_holding_the_whole_budget_probes_above_it_and_backs_off_on_a_429(
    simulator: str, offline: Path, tmp_path: Path
):
    """budget-episode-v1: the child given `3 8` (its share, and the most it may probe to)
    climbs above 3 while all its connections are busy, to the 5 the simulator admits; the
    429s that draw put it back to its share and it does not probe that high again, so they
    stay few."""
    from steward.activities.logs.paths import write_atomic

    log = await _sim_log_of(60, tmp_path)
    narrow, url = _narrow_simulator(tmp_path, concurrency=5, latency=0.3)
    connections = tmp_path / "scan" / "connections"
    connections.parent.mkdir()
    write_atomic(connections, "3 8\n")
    try:
        os.environ["SIM_BASE_URL"] = f"{url}/v1"  # monkeypatched by `offline`: restored after
        answer, last = await _scan_following(log.location, tmp_path, connections, 3, 8)
        stats = httpx.get(f"{url}/admin/stats").json()
    finally:
        narrow.kill()
        narrow.wait()
    assert answer == {"findings": []}, last
    assert stats["scanned"] == 60
    assert stats["peak_in_flight"] == 5  # above its share of 3, up to what is admitted
    assert 1 <= stats["rate_limited"] <= 6, stats  # it found the limit, and kept below it
