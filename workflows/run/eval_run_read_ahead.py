"""Reads a tend makes that do not depend on what it observes, started beside its observe
(read-ahead-v1, eval_run_versions.py): the live options, and, while a model of the run has no
connection budget yet (its first spawn), the provider ledger's answer for it. The tend takes
each answer where it took its own read before, so what it decides and journals is the same;
only the waiting is shared. A queued run the ledger admits spawns after one round of
activities instead of three (observe, then options, then the budget exchange).

A tend that stops before it takes a read cancels it (its activity too).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import BudgetAnswer, LiveOptions
    from steward.workflows.run import eval_run_budget, eval_run_options
    from steward.workflows.run.eval_run_context import RunContext


@dataclass
class ReadAhead:
    options: asyncio.Task[LiveOptions]
    # What the exchange was asked about (the run's models then) and its answer (or failure).
    budget_models: list[str]
    budgets: asyncio.Task[BudgetAnswer | ActivityError] | None = None

    def take_options(self) -> asyncio.Task[LiveOptions] | None:
        task, self.options = self.options, None  # type: ignore[assignment]
        return task

    def take_budgets(self, models: list[str]) -> asyncio.Task[BudgetAnswer | ActivityError] | None:
        """The exchange read ahead, if it asked about these models (else the caller asks)."""
        if self.budgets is None or models != self.budget_models:
            return None
        task, self.budgets = self.budgets, None
        return task

    def cancel(self) -> None:
        """Cancel what the tend did not take (it stopped short, or needed no spawn)."""
        for task in (self.options, self.budgets):
            if task is not None and not task.done():
                task.cancel()
        self.options, self.budgets = None, None  # type: ignore[assignment]


def start(ctx: RunContext) -> ReadAhead:
    """Start the reads, in this order (their commands go out with the observe's)."""
    options = asyncio.create_task(eval_run_options.read_options(ctx))
    models = eval_run_budget.unbudgeted_models(ctx)
    ahead = ReadAhead(options=options, budget_models=models)
    # Only where a spawn may follow: pending work and not paused (seed runs before a spawn).
    state = ctx.state
    if models and not state.paused and any(t.phase == "pending" for t in state.tasks):
        ahead.budgets = asyncio.create_task(eval_run_budget.ask_ledger(ctx, {}))
    return ahead
