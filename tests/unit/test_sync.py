"""Mirroring a workspace's files to a sync target, with `_steward.yaml`'s secrets hidden."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import fsspec
import yaml

from steward.activities.logs.sync import UNPARSABLE, scrub_options, sync_workspace

SECRETS = [
    "sk-abc # not a comment",
    "MIIEsecretbody",
    "slack://tokenA/tokenB",
    "mailto://user:pw@host",
    "ghp_plainvalue",
    "hunter22",
]

OPTIONS = """\
# Steward options for this workspace
log_root: s3://bucket/logs  # where logs go
temporal_api_key: "sk-abc # not a comment"   # the API key
temporal_tls_key: |
  -----BEGIN KEY-----
  MIIEsecretbody
  -----END KEY-----
notification:
  # slack, then mail
  - slack://tokenA/tokenB
  - mailto://user:pw@host
github_token: ghp_plainvalue
DB_Password: 'hunter22'
prices:
  openai/gpt-4o: {input: 2.5, output: 10}
heartbeat: 1h  # liveness
temporal_namespace: default
"""


def test_scrub_hides_secrets_and_keeps_the_rest():
    scrubbed = scrub_options(OPTIONS)
    for secret in SECRETS:
        assert secret not in scrubbed
    for comment in ["# Steward options", "# where logs go", "# the API key", "# slack, then mail"]:
        assert comment in scrubbed
    assert "# liveness" in scrubbed
    document = yaml.safe_load(scrubbed)
    assert document == {
        "log_root": "s3://bucket/logs",
        "temporal_api_key": "***",
        "temporal_tls_key": "***",
        "notification": ["***", "***"],
        "github_token": "***",
        "DB_Password": "***",
        "prices": {"openai/gpt-4o": {"input": 2.5, "output": 10}},
        "heartbeat": "1h",
        "temporal_namespace": "default",
    }
    assert list(document) == list(yaml.safe_load(OPTIONS))  # same keys, same order


def test_scrub_odd_layouts_still_hide_secrets():
    inline = scrub_options("notification: [a://one, b://two]  # both\nmy_secret: {a: x1}\n")
    assert yaml.safe_load(inline) == {"notification": "***", "my_secret": "***"}
    assert "# both" in inline
    # a secret key inside a flow mapping is beyond the line rewrite: the options are dumped
    nested = scrub_options("env: {api_key: hunter22}  # note\nx: 1\n")
    assert "hunter22" not in nested
    assert yaml.safe_load(nested) == {"env": {"api_key": "***"}, "x": 1}
    assert scrub_options("") == ""
    assert scrub_options("temporal_api_key:\nx: 1\n") == "temporal_api_key:\nx: 1\n"


def test_unparsable_options_are_withheld():
    text = "temporal_api_key: hunter22\nnotification: [unclosed\n"
    scrubbed = scrub_options(text)
    assert scrubbed == UNPARSABLE
    assert "hunter22" not in scrubbed


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "status.md").write_text("# Status\nrunning\n")
    (workspace / "journal.jsonl").write_text('{"seq": 1}\n')
    (workspace / "_steward.yaml").write_text(OPTIONS)
    (workspace / "evalset.py").write_text("from inspect_ai import eval_set\n")
    return workspace


def _touch_later(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_sync_to_a_local_dir(tmp_path):
    workspace = _workspace(tmp_path)
    target = tmp_path / "mirror" / "deep"  # does not exist yet
    assert sync_workspace(str(workspace), str(target)) == [
        "status.md",
        "journal.jsonl",
        "_steward.yaml",
        "evalset.py",
    ]
    mirror = target / "_steward"
    assert sorted(p.name for p in mirror.iterdir()) == [
        "_steward.yaml",
        "evalset.py",
        "journal.jsonl",
        "status.md",
    ]
    assert (mirror / "status.md").read_text() == "# Status\nrunning\n"
    options = (mirror / "_steward.yaml").read_text()
    assert options == scrub_options(OPTIONS)
    assert not any(secret in options for secret in SECRETS)

    assert sync_workspace(str(workspace), str(target)) == []  # nothing changed
    with open(workspace / "journal.jsonl", "a") as handle:
        handle.write('{"seq": 2}\n')
    (workspace / "analysis.md").write_text("findings\n")
    (workspace / "status.md").write_text("# Status\nstalled\n")  # same size, later mtime
    _touch_later(workspace / "status.md")
    assert sync_workspace(str(workspace), str(target)) == [
        "status.md",
        "journal.jsonl",
        "analysis.md",
    ]
    assert (mirror / "journal.jsonl").read_text() == '{"seq": 1}\n{"seq": 2}\n'
    assert (mirror / "status.md").read_text() == "# Status\nstalled\n"
    assert (mirror / "analysis.md").read_text() == "findings\n"

    (mirror / "evalset.py").unlink()  # a mirror copy gone: copied again
    assert sync_workspace(str(workspace), str(target)) == ["evalset.py"]


def test_sync_to_an_fsspec_target(tmp_path):
    workspace = _workspace(tmp_path)
    (workspace / "evalset.py").unlink()
    target = f"memory://steward-sync-{uuid.uuid4().hex[:8]}/logs"
    assert sync_workspace(str(workspace), target) == ["status.md", "journal.jsonl", "_steward.yaml"]
    fs = fsspec.filesystem("memory")
    with fsspec.open(f"{target}/_steward/_steward.yaml", "rt") as handle:
        options = handle.read()
    assert not any(secret in options for secret in SECRETS)
    assert yaml.safe_load(options)["temporal_api_key"] == "***"
    assert fs.exists(f"{target}/_steward/journal.jsonl")
    assert not fs.exists(f"{target}/_steward/evalset.py")
    assert sync_workspace(str(workspace), target) == []
    (workspace / "_steward.yaml").write_text(OPTIONS + "max_workers: 4\n")
    assert sync_workspace(str(workspace), target) == ["_steward.yaml"]
    with fsspec.open(f"{target}/_steward/_steward.yaml", "rt") as handle:
        assert handle.read().endswith("max_workers: 4\n")
