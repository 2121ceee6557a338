"""LLM cost: token and dollar arithmetic (pure), and usage read from real Inspect logs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from steward.activities.logs import cost as cost_activity
from steward.activities.logs.cost import log_usage
from steward.workflows.policy.cost import (
    CostCap,
    LlmCost,
    ModelTokens,
    Price,
    cap_crossed,
    gi_minutes,
    merge,
    price_for,
)


# ---------------------------------------------------------------- pure maths
def test_plus_sums_tokens_and_keeps_usd_only_when_every_token_is_costed():
    a = ModelTokens(input=10, output=2, cache_read=5, cache_write=1, reasoning=1, total=18, usd=0.5)
    b = ModelTokens(input=1, output=1, total=2, usd=0.25)
    both = a.plus(b)
    assert (both.input, both.output, both.cache_read, both.cache_write) == (11, 3, 5, 1)
    assert (both.reasoning, both.total, both.usd) == (1, 20, 0.75)
    # One side has tokens Inspect could not cost: the sum's cost is unknown, not a partial sum.
    assert a.plus(ModelTokens(input=3, total=3)).usd is None
    assert ModelTokens(input=3, total=3).plus(a).usd is None
    # One side has no tokens at all: nothing uncosted, the known cost stands.
    assert a.plus(ModelTokens()).usd == 0.5
    assert ModelTokens().plus(a).usd == 0.5
    assert ModelTokens().plus(ModelTokens()).usd is None


def test_cached_share():
    assert ModelTokens(input=25, cache_read=75).cached_share == 0.75
    assert ModelTokens(input=10).cached_share == 0.0
    assert ModelTokens(output=10).cached_share == 0.0  # no input: 0, not a division by zero


def test_price_for_exact_then_patterns_then_bare_name():
    exact, anything_openai, mini, bare = (Price(input=i, output=i) for i in (1.0, 2.0, 3.0, 4.0))
    prices = {
        "openai/gpt-4o": exact,
        "openai/*": anything_openai,
        "openai/*-mini": mini,
        "claude-sonnet-4": bare,
    }
    assert price_for("openai/gpt-4o", prices) is exact
    assert price_for("openai/gpt-4.1", prices) is anything_openai
    assert price_for("openai/gpt-4o-mini", prices) is mini  # the most specific pattern wins
    assert price_for("anthropic/claude-sonnet-4", prices) is bare
    assert price_for("google/gemini-2.5-pro", prices) is None
    assert price_for("OPENAI/gpt-4o", prices) is None  # patterns are case-sensitive
    assert price_for("anything", {}) is None


def test_dollars_configured_price_wins_over_inspect_usd_and_unknown_models_are_named():
    cost = LlmCost(
        models={
            # 1M input, 1M output, 2M cache reads, 1M cache writes; Inspect thought $99.
            "openai/gpt-4o": ModelTokens(
                input=1_000_000,
                output=1_000_000,
                cache_read=2_000_000,
                cache_write=1_000_000,
                total=5_000_000,
                usd=99.0,
            ),
            "anthropic/claude-sonnet-4": ModelTokens(input=10, total=10, usd=0.25),
            "mystery/model": ModelTokens(input=10, total=10),
            "idle/model": ModelTokens(),  # no tokens: costs nothing, is not "unknown"
        }
    )
    with_cache_prices = {"openai/*": Price(input=2, output=8, cache_read=0.5, cache_write=2.5)}
    usd, unknown = cost.dollars(with_cache_prices)
    assert usd == pytest.approx(2 + 8 + 2 * 0.5 + 2.5 + 0.25)
    assert unknown == ["mystery/model"]
    # Without cache prices, cache reads and writes are charged at the input price.
    usd, _ = cost.dollars({"gpt-4o": Price(input=2, output=8)})
    assert usd == pytest.approx(2 + 8 + 2 * 2 + 2 + 0.25)
    # No configured price: Inspect's own cost is used where it knew one.
    usd, unknown = cost.dollars({})
    assert usd == pytest.approx(99.25)
    assert unknown == ["mystery/model"]
    # Nothing could be priced: unknown, not zero.
    assert LlmCost(models={"mystery/model": ModelTokens(total=1)}).dollars({}) == (
        None,
        ["mystery/model"],
    )
    assert LlmCost().dollars({}) == (0.0, [])


def test_merge_sums_each_model_over_logs():
    merged = merge(
        {
            "a.eval": {"m/one": ModelTokens(input=1, total=1, usd=0.1)},
            "b.eval": {
                "m/one": ModelTokens(input=2, output=3, total=5, usd=0.2),
                "m/two": ModelTokens(output=7, total=7),
            },
            "c.eval": {},
        }
    )
    assert set(merged.models) == {"m/one", "m/two"}
    assert merged.models["m/one"].input == 3
    assert merged.models["m/one"].usd == pytest.approx(0.3)
    assert merged.models["m/two"].output == 7
    assert merged.total_tokens() == 13
    assert merge({}).models == {}


def test_cap_crossed_by_dollars_tokens_or_not_at_all():
    cost = LlmCost(models={"openai/gpt-4o": ModelTokens(input=1_200_000, total=1_200_345)})
    prices = {"openai/gpt-4o": Price(input=4.3333, output=10)}  # $5.20
    assert cap_crossed(cost, prices, CostCap(usd=5.0)) == (
        "LLM cost $5.20 crossed the cap of $5.00"
    )
    assert cap_crossed(cost, prices, CostCap(tokens=1_000_000)) == (
        "1,200,345 tokens crossed the cap of 1,000,000"
    )
    # Dollars under their cap, tokens over theirs.
    assert cap_crossed(cost, prices, CostCap(usd=10, tokens=1_000_000)) == (
        "1,200,345 tokens crossed the cap of 1,000,000"
    )
    assert cap_crossed(cost, prices, CostCap(usd=10, tokens=2_000_000)) is None
    assert cap_crossed(cost, prices, CostCap()) is None
    assert cap_crossed(cost, prices, None) is None
    # No price known: a dollar cap cannot be judged (never a guess).
    assert cap_crossed(cost, {}, CostCap(usd=0.01)) is None
    # Reaching the cap is crossing it; small sums keep the digits that tell them apart.
    small = LlmCost(models={"m/x": ModelTokens(input=1, total=1, usd=0.0042)})
    assert cap_crossed(small, {}, CostCap(usd=0.004)) == (
        "LLM cost $0.0042 crossed the cap of $0.004"
    )
    assert cap_crossed(small, {}, CostCap(usd=0.0042)) is not None
    # Unpriced models are left out of the figure, and said so.
    mixed = LlmCost(
        models={
            "openai/gpt-4o": ModelTokens(input=1_200_000, total=1_200_000),
            "mystery/model": ModelTokens(input=5, total=5),
        }
    )
    assert cap_crossed(mixed, prices, CostCap(usd=5)) == (
        "LLM cost $5.20 crossed the cap of $5.00 (not counting mystery/model, which has no price)"
    )


def test_gi_minutes():
    assert gi_minutes(2, 90) == 3.0
    assert gi_minutes(0.5, 60) == 0.5
    assert gi_minutes(4, 0) == 0.0


# ---------------------------------------------------------------- real Inspect logs
def _task(n: int, *extra_solvers):
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    return Task(
        dataset=[Sample(id=i, input=f"Reply with: w{i}", target=f"w{i}") for i in range(1, n + 1)],
        solver=[generate(), *extra_solvers],
        scorer=match(),
    )


@pytest.fixture(scope="module")
def offline_log(tmp_path_factory):
    """A 3-sample eval of the offline model, and what log_usage read of its log while the
    eval was still running its last sample (samples 1 and 2 written, status "started")."""
    from inspect_ai import eval
    from inspect_ai.log import read_eval_log
    from inspect_ai.solver import solver

    import steward.worker.inspect_plugins  # noqa: F401  (registers steward/offline)

    log_dir = tmp_path_factory.mktemp("offline-logs")
    during: dict = {}

    @solver
    def peek_at_own_log():
        async def solve(state, generate):
            if state.sample_id == 3:
                (path,) = log_dir.glob("*.eval")

                def read():
                    during["status"] = read_eval_log(str(path), header_only=True).status
                    during["usage"] = log_usage(str(path))

                await anyio.to_thread.run_sync(read)
            return state

        return solve

    (log,) = eval(
        _task(3, peek_at_own_log()),
        model="steward/offline",
        log_dir=str(log_dir),
        display="none",
        max_samples=1,  # samples run one by one, each written before the next starts
        log_buffer=1,
    )
    assert log.status == "success"
    return log.location, during


def test_log_usage_of_a_finished_log_matches_its_stats(offline_log):
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

    path, _ = offline_log
    usage = log_usage(path)
    header = read_eval_log(path, header_only=True)
    (stats,) = header.stats.model_usage.values()
    assert list(usage) == ["steward/offline"] == list(header.stats.model_usage)
    tokens = usage["steward/offline"]
    assert tokens.input > 0 and tokens.output > 0
    assert (tokens.input, tokens.output, tokens.total) == (
        stats.input_tokens,
        stats.output_tokens,
        stats.total_tokens,
    )
    assert tokens.cache_read == tokens.cache_write == tokens.reasoning == 0
    assert tokens.usd is None  # Inspect has no cost data for the offline model
    # ...and agrees with the samples' own usage.
    summaries = read_eval_log_sample_summaries(path)
    assert len(summaries) == 3
    assert tokens.input == sum(s.model_usage["steward/offline"].input_tokens for s in summaries)
    assert merge({path: usage}).dollars({}) == (None, ["steward/offline"])


def test_log_usage_of_a_running_log_sums_the_samples_written_so_far(offline_log):
    path, during = offline_log
    assert during["status"] == "started"
    finished = log_usage(path)["steward/offline"]
    running = during["usage"]["steward/offline"]
    # Samples 1 and 2 were written; the 3rd (same-sized prompt) was still running.
    assert running.input == finished.input * 2 // 3 > 0
    assert running.output == finished.output * 2 // 3 > 0
    assert running.total == finished.total * 2 // 3


def test_log_usage_carries_inspects_own_cost_and_cache_tokens(tmp_path):
    from inspect_ai import eval
    from inspect_ai.model import (
        ModelCost,
        ModelInfo,
        ModelOutput,
        ModelUsage,
        get_model,
        set_model_info,
    )

    # A model name only this test uses, so registering its cost data touches no other test.
    name = "mockllm/steward-cost-test"
    inspect_cost = ModelCost(input=3, output=15, input_cache_read=0.3, input_cache_write=3.75)
    set_model_info(name, ModelInfo(cost=inspect_cost))

    def output(i: int) -> ModelOutput:
        out = ModelOutput.from_content(model="steward-cost-test", content=f"w{i}")
        out.usage = ModelUsage(
            input_tokens=100,
            output_tokens=20,
            total_tokens=470,
            input_tokens_cache_read=300,
            input_tokens_cache_write=50,
            reasoning_tokens=5,
        )
        return out

    model = get_model(name, custom_outputs=[output(i) for i in range(1, 4)])
    (log,) = eval(_task(3), model=model, log_dir=str(tmp_path), display="none")
    assert log.status == "success"

    tokens = log_usage(log.location)[name]
    assert tokens.model_dump() == {
        "input": 300,
        "output": 60,
        "cache_read": 900,
        "cache_write": 150,
        "reasoning": 15,
        "total": 1410,
        "usd": pytest.approx((300 * 3 + 60 * 15 + 900 * 0.3 + 150 * 3.75) / 1e6),
    }
    assert tokens.cached_share == 0.75
    cost = merge({log.location: {name: tokens}})
    # Priced the same as Inspect's cost data, our arithmetic agrees with Inspect's.
    same = Price(input=3, output=15, cache_read=0.3, cache_write=3.75)
    assert cost.dollars({name: same})[0] == pytest.approx(tokens.usd)
    assert cost.dollars({}) == (tokens.usd, [])
    # A configured price wins.
    assert cost.dollars({"mockllm/*": Price(input=0, output=1000)}) == (pytest.approx(0.06), [])


def test_log_usage_reads_a_log_again_only_when_it_changes(offline_log, tmp_path, monkeypatch):
    path = str(tmp_path / "copy.eval")
    shutil.copy(offline_log[0], path)
    original = log_usage(offline_log[0])  # read (or cached) before counting starts
    reads = []
    real_read = cost_activity._read
    monkeypatch.setattr(cost_activity, "_read", lambda p: reads.append(p) or real_read(p))

    first = log_usage(path)
    assert first and log_usage(path) == first and log_usage(f"file://{path}") == first
    assert len(reads) == 1
    # Callers cannot corrupt the cache.
    first["steward/offline"].input = -1
    assert log_usage(path)["steward/offline"].input > 0
    assert len(reads) == 1

    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert log_usage(path) == original
    assert reads == [path, path]

    # Caught mid-rewrite: what it last read stands until the log can be read again.
    Path(path).write_bytes(b"not a zip")
    assert log_usage(path)["steward/offline"].input > 0


def test_log_usage_of_a_missing_or_unreadable_log_is_empty(tmp_path):
    assert log_usage(str(tmp_path / "missing.eval")) == {}
    assert log_usage(str(tmp_path)) == {}  # a directory
    garbage = tmp_path / "garbage.eval"
    garbage.write_bytes(b"PK\x03\x04 truncated")
    assert log_usage(str(garbage)) == {}
    empty = tmp_path / "empty.eval"
    empty.touch()
    assert log_usage(str(empty)) == {}
