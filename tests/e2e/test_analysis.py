"""analysis.md: a facts block per task between markers, rewritten each tend; prose outside the
markers (before, between and after the blocks) is never changed."""

from __future__ import annotations

import re

from harness.helpers import Steward, make_workspace, wait_for
from steward.workflows.views.analysis_view import END, begin_marker, block, merge_analysis

PROSE_TOP = "# Analysis\n\nMy reading: alpha looks easy.\n\n"
PROSE_BETWEEN = "\nNote between blocks — *keep me*.\n\n"
PROSE_END = "\n## Conclusions\n\nNothing yet.\n"


def test_merge_replaces_only_marked_bodies_and_appends_new_tasks():
    text = (
        PROSE_TOP
        + block("a", "a1", "old a")
        + PROSE_BETWEEN
        + block("b", "b2", "old b")
        + PROSE_END
    )
    merged = merge_analysis(
        text, {("a", "a1"): "new a", ("b", "b2"): "new b", ("c", "c3"): "new c"}
    )
    assert merged.startswith(
        PROSE_TOP + block("a", "a1", "new a") + PROSE_BETWEEN + block("b", "b2", "new b")
    )
    assert PROSE_END in merged and merged.rstrip().endswith(block("c", "c3", "new c"))
    # A task that left the run keeps its last facts; a second pass changes nothing.
    assert "old a" in merge_analysis(text, {("b", "b2"): "x"})
    assert (
        merge_analysis(merged, {("a", "a1"): "new a", ("b", "b2"): "new b", ("c", "c3"): "new c"})
        == merged
    )


def test_an_orphaned_begin_marker_never_swallows_prose():
    broken = begin_marker("a", "a1") + "\nfacts whose end marker was deleted\n\nMy prose.\n"
    merged = merge_analysis(broken, {("a", "a1"): "fresh"})
    assert merged.startswith(broken.rstrip("\n"))  # all of it kept
    assert merged.rstrip().endswith(block("a", "a1", "fresh"))
    assert merged.count(END) == 1


def test_a_new_file_explains_the_markers():
    merged = merge_analysis(None, {("a", "a1"): "facts"})
    assert merged.startswith("# Analysis") and block("a", "a1", "facts") in merged


def _tend_of(analysis: str) -> int:
    """The tend that last wrote the facts (each block says `Updated: tend #N at ...`)."""
    tends = {int(n) for n in re.findall(r"Updated: tend #(\d+) ", analysis)}
    assert len(tends) == 1, analysis
    return tends.pop()


def test_facts_follow_the_run_and_prose_is_preserved_across_tends(steward: Steward, workspace_root):
    workspace = make_workspace(steward, workspace_root, {"alpha": 2, "beta": 2})
    steward.ok("launch", "--no-timer", cwd=workspace)
    path = workspace / "analysis.md"
    # launch returns once the first tend has counted; its workspace write lands just after
    # (and a worker's exit may have woken a second tend by the time the test reads it).
    first = wait_for(lambda: path.exists() and path.read_text(), what="analysis.md")
    assert "### alpha · steward/offline" in first and "### beta · steward/offline" in first
    first_tend = _tend_of(first)

    # People write around the blocks: at the top, between them and at the end.
    blocks = first[first.index("<!-- steward:facts") :].rstrip("\n")
    alpha_end = blocks.index(END) + len(END)
    hand_written = (
        PROSE_TOP
        + blocks[:alpha_end]
        + "\n"
        + PROSE_BETWEEN
        + blocks[alpha_end:].lstrip("\n")
        + "\n"
        + PROSE_END
    )
    path.write_text(hand_written)
    status = steward.wait_phase(workspace, {"finished"}, tend=True)
    assert status["state"]["tend_count"] >= 2

    final = path.read_text()
    assert final.startswith(PROSE_TOP + "<!-- steward:facts")
    assert PROSE_BETWEEN in final and final.endswith(PROSE_END)
    assert final.count(END) == 2 and _tend_of(final) > first_tend
    assert "Progress: complete, 2/2 samples" in final
    assert "Scores: match: accuracy 1" in final
