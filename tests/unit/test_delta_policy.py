"""The relaunch delta's rules, as pure policy."""

from __future__ import annotations

from steward.workflows.contracts import TaskSpec
from steward.workflows.policy.delta import ArchivedLog, Delta, compute_delta, delta_lines, gate

MODEL = "openai/gpt-4o"


def _task(name: str, identifier: str | None = None, samples=10, epochs=1, model=MODEL, **kw):
    return TaskSpec(
        name=name,
        model=model,
        identifier=identifier or f"{name}-id",
        samples=samples,
        epochs=epochs,
        **kw,
    )


def _archived(task: TaskSpec, samples=None, epochs=None, path=None) -> ArchivedLog:
    return ArchivedLog(
        identifier=task.identifier,
        name=task.name,
        model=task.model,
        samples=task.samples if samples is None else samples,
        epochs=task.epochs if epochs is None else epochs,
        path=path or f"logs-archive/{task.identifier}.eval",
    )


def _logs(*tasks: TaskSpec) -> dict[str, str | None]:
    return {t.identifier: f"logs/{t.identifier}.eval" for t in tasks}


def _kinds(delta: Delta) -> list[tuple[str, str]]:
    return [(row.kind, row.identifier) for row in delta.rows]


def test_identical_relaunch_is_all_unchanged_and_additive():
    tasks = [_task("a"), _task("b", epochs=2)]
    delta = compute_delta(tasks, _logs(*tasks), list(tasks), [])
    assert _kinds(delta) == [("unchanged", "a-id"), ("unchanged", "b-id")]
    assert not delta.changed
    assert delta.additive
    assert delta.moving == []
    assert all(row.moves == [] and row.detail == "" for row in delta.rows)
    assert gate(delta, accept_archive=False) is None
    assert delta_lines(delta) == ["no changes"]


def test_a_new_task_is_an_add_and_passes_the_gate():
    a = _task("a")
    delta = compute_delta([a], _logs(a), [a, _task("b", samples=5, epochs=2)], [])
    assert _kinds(delta) == [("unchanged", "a-id"), ("add", "b-id")]
    add = delta.rows[1]
    assert add.moves == [] and add.previous is None
    assert add.detail == "5 samples x 2 epochs"
    assert delta.changed and delta.additive
    assert gate(delta, accept_archive=False) is None
    assert delta_lines(delta) == [f"add        b ({MODEL}): 5 samples x 2 epochs"]


def test_raised_epochs_extend():
    old = _task("a", epochs=1)
    delta = compute_delta([old], _logs(old), [_task("a", epochs=3)], [])
    [row] = delta.rows
    assert (row.kind, row.identifier, row.detail) == ("extend", "a-id", "epochs 1 -> 3")
    assert row.moves == []
    assert delta.additive and gate(delta, False) is None


def test_a_grown_dataset_extends():
    old = _task("a", samples=10, epochs=2)
    delta = compute_delta([old], _logs(old), [_task("a", samples=20, epochs=2)], [])
    [row] = delta.rows
    assert row.kind == "extend"
    assert row.detail == "samples 10 -> 20 (x2 epochs)"


def test_more_samples_fewer_epochs_still_extends():
    # the committed log does not cover the new samples, even though the product is the same
    old = _task("a", samples=10, epochs=2)
    delta = compute_delta([old], _logs(old), [_task("a", samples=20, epochs=1)], [])
    [row] = delta.rows
    assert row.kind == "extend"
    assert row.detail == "samples 10 -> 20, epochs 2 -> 1"


def test_a_smaller_plan_is_unchanged_with_a_detail():
    old = _task("a", samples=20, epochs=3)
    delta = compute_delta([old], _logs(old), [_task("a", samples=20, epochs=1)], [])
    [row] = delta.rows
    assert row.kind == "unchanged"
    assert row.detail.startswith("epochs 3 -> 1")
    assert "smaller" in row.detail
    assert not delta.changed
    lines = delta_lines(delta)
    assert lines[0] == "no changes"
    assert lines[1].startswith("unchanged  a (")


def test_a_removed_task_is_gated_unless_accepted():
    a, b = _task("a"), _task("b")
    delta = compute_delta([a, b], _logs(a, b), [a], [])
    assert _kinds(delta) == [("unchanged", "a-id"), ("removed", "b-id")]
    removed = delta.rows[1]
    assert removed.moves == ["logs/b-id.eval"]
    assert not delta.additive
    assert delta.moving == [removed] == delta.archiving
    refusal = gate(delta, accept_archive=False)
    assert refusal == (
        f"This launch would move results to logs-archive/: removed b ({MODEL}, 1 log); "
        "launch again with --accept-archive to commit it."
    )
    assert gate(delta, accept_archive=True) is None


def test_a_removed_task_without_a_log_moves_nothing_and_is_not_gated():
    a, b = _task("a"), _task("b")
    delta = compute_delta([a, b], {"a-id": "logs/a.eval", "b-id": None}, [a], [])
    removed = delta.rows[1]
    assert (removed.kind, removed.moves, removed.detail) == ("removed", [], "no log to move")
    assert not delta.additive  # a task is gone ...
    assert delta.moving == [removed]
    assert delta.archiving == []  # ... but no results move
    assert gate(delta, accept_archive=False) is None
    # a committed task missing from the logs map never wrote one either
    assert compute_delta([a, b], {}, [a], []).rows[1].moves == []


def test_a_changed_configuration_supersedes_and_adds():
    old = _task("a", identifier="a-v1", args_hash="h1")
    new = _task("a", identifier="a-v2", args_hash="h2")
    delta = compute_delta([old], _logs(old), [new], [])
    assert _kinds(delta) == [("superseded", "a-v1"), ("add", "a-v2")]
    superseded, add = delta.rows
    assert superseded.superseded_by == "a-v2"
    assert superseded.moves == ["logs/a-v1.eval"]
    assert superseded.detail == "task args changed; 1 log to logs-archive/"
    assert add.previous == "a-v1" and add.moves == []
    assert add.detail.startswith("task args changed")
    assert not delta.additive
    assert delta.moving == [superseded]
    assert gate(delta, False) == (
        f"This launch would move results to logs-archive/: superseded a ({MODEL}, 1 log); "
        "launch again with --accept-archive to commit it."
    )
    assert gate(delta, True) is None


def test_same_name_other_model_is_not_a_supersession():
    old = _task("a", identifier="a-gpt", model="openai/gpt-4o")
    new = _task("a", identifier="a-claude", model="anthropic/claude")
    delta = compute_delta([old], _logs(old), [new], [])
    assert _kinds(delta) == [("add", "a-claude"), ("removed", "a-gpt")]


def test_a_new_variant_beside_the_kept_one_supersedes_nothing():
    old = _task("a", identifier="a-v1")
    delta = compute_delta([old], _logs(old), [old, _task("a", identifier="a-v2")], [])
    assert _kinds(delta) == [("unchanged", "a-v1"), ("add", "a-v2")]
    assert delta.additive


def test_an_archived_log_restores_a_task_asked_for_again():
    a, b = _task("a"), _task("b", samples=10, epochs=2)
    log = _archived(b, samples=12, epochs=3)
    delta = compute_delta([a], _logs(a), [a, b], [log])
    assert _kinds(delta) == [("unchanged", "a-id"), ("restore", "b-id")]
    restore = delta.rows[1]
    assert restore.moves == [log.path]
    assert restore.detail == "archived log covers 12 samples x 3 epochs"
    assert delta.additive and gate(delta, False) is None


def test_an_archived_log_with_too_few_samples_or_epochs_does_not_restore():
    b = _task("b", samples=10, epochs=2)
    for log in (_archived(b, samples=9), _archived(b, epochs=1)):
        delta = compute_delta([], {}, [b], [log])
        [row] = delta.rows
        assert row.kind == "add" and row.moves == []
        assert "archived log covers only" in row.detail


def test_an_archived_log_of_another_identifier_does_not_restore():
    b = _task("b")
    log = _archived(_task("b", identifier="b-other"))
    assert _kinds(compute_delta([], {}, [b], [log])) == [("add", "b-id")]


def test_the_first_covering_archived_log_restores_and_answers_once():
    b = _task("b", samples=10)
    small = _archived(b, samples=5, path="logs-archive/small.eval")
    first = _archived(b, path="logs-archive/first.eval")
    second = _archived(b, samples=20, path="logs-archive/second.eval")
    delta = compute_delta([], {}, [b, b], [small, first, second])
    [row] = delta.rows  # a repeated identifier counts once
    assert row.kind == "restore" and row.moves == ["logs-archive/first.eval"]


def test_going_back_to_an_archived_configuration_supersedes_and_restores():
    v1 = _task("a", identifier="a-v1", args_hash="h1")
    v2 = _task("a", identifier="a-v2", args_hash="h2")
    delta = compute_delta([v2], _logs(v2), [v1], [_archived(v1)])
    assert _kinds(delta) == [("superseded", "a-v2"), ("restore", "a-v1")]
    superseded, restore = delta.rows
    assert superseded.superseded_by == "a-v1"
    assert superseded.moves == ["logs/a-v2.eval"]
    assert restore.previous == "a-v2"
    assert restore.moves == ["logs-archive/a-v1.eval"]
    assert gate(delta, False) is not None
    assert gate(delta, True) is None
    assert delta_lines(delta) == [
        f"superseded a ({MODEL}): task args changed; 1 log to logs-archive/",
        f"restore    a ({MODEL}): task args changed; archived log covers 10 samples x 1 epoch",
    ]


def test_a_changed_task_whose_archived_log_is_too_small_is_an_add_saying_both_whys():
    # the superseded row names why the identifier changed; the add names it too, then the plan
    # and what the archived log lacks
    v1 = _task("a", identifier="a-v1", args_hash="h1")
    v2 = _task("a", identifier="a-v2", args_hash="h2", samples=10)
    delta = compute_delta([v1], {"a-v1": None}, [v2], [_archived(v2, samples=5)])
    superseded, add = delta.rows
    assert (superseded.kind, superseded.moves) == ("superseded", [])
    assert superseded.detail == "task args changed; no log to move"
    assert (add.kind, add.previous, add.moves) == ("add", "a-v1", [])
    assert add.detail == (
        "task args changed; 10 samples x 1 epoch; the archived log covers only 5 samples x 1 epoch"
    )


def test_a_superseded_task_without_a_log_is_not_gated():
    old = _task("a", identifier="a-v1")
    new = _task("a", identifier="a-v2")
    delta = compute_delta([old], {"a-v1": None}, [new], [])
    assert _kinds(delta) == [("superseded", "a-v1"), ("add", "a-v2")]
    assert delta.rows[0].moves == []
    assert "configuration changed" in delta.rows[0].detail
    assert gate(delta, False) is None


def test_rows_follow_the_new_order_then_removed_in_committed_order():
    committed = [
        _task("r1"),
        _task("keep"),
        _task("s", identifier="s-v1"),
        _task("r2"),
        _task("grow"),
    ]
    new = [
        _task("fresh"),
        _task("grow", epochs=2),
        _task("s", identifier="s-v2"),
        _task("keep"),
    ]
    delta = compute_delta(committed, _logs(*committed), new, [])
    assert _kinds(delta) == [
        ("add", "fresh-id"),
        ("extend", "grow-id"),
        ("superseded", "s-v1"),
        ("add", "s-v2"),
        ("unchanged", "keep-id"),
        ("removed", "r1-id"),
        ("removed", "r2-id"),
    ]
    refusal = gate(delta, accept_archive=False)
    assert refusal is not None
    assert "superseded s (" in refusal
    assert refusal.index("superseded s") < refusal.index("removed r1") < refusal.index("removed r2")
    lines = delta_lines(delta)
    assert [line.split()[0] for line in lines] == [
        "add",
        "extend",
        "superseded",
        "add",
        "removed",
        "removed",
    ]


def test_a_gate_sentence_counts_logs():
    a = _task("a")
    delta = Delta(
        rows=[
            compute_delta([a], _logs(a), [], [])
            .rows[0]
            .model_copy(update={"moves": ["logs/1.eval", "logs/2.eval"]})
        ]
    )
    assert f"removed a ({MODEL}, 2 logs)" in (gate(delta, False) or "")
