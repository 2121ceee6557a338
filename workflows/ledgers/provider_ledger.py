"""ProviderLedger: one long-lived workflow that remembers, per provider endpoint, the connection
budget runs have learned there (workflows/policy/provider_budget.py), so the next run against the same
endpoint starts near the provider's limit instead of rediscovering it.

Runs reach it through one update, `exchange` (from an activity, which starts the ledger on first
use): they hand in what they learned and get back what is known of the endpoints they use. It
holds no queue and waits for nothing; it continues as new when its history grows long.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from steward.workflows.activity_io import BudgetExchange, LearnedBudget, ProviderLedgerInput
    from steward.workflows.names import WorkflowType

PROVIDER_LEDGER_ID = "steward-provider-budgets"


@workflow.defn(name=WorkflowType.PROVIDER_LEDGER)
class ProviderLedger:
    @workflow.init
    def __init__(self, start: ProviderLedgerInput) -> None:
        self._known: dict[str, LearnedBudget] = dict(start.known)

    @workflow.run
    async def run(self, start: ProviderLedgerInput) -> None:
        await workflow.wait_condition(lambda: workflow.info().is_continue_as_new_suggested())
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(ProviderLedgerInput(known=self._known))

    @workflow.update
    def exchange(self, request: BudgetExchange) -> dict[str, LearnedBudget]:
        """Take in what a run learned; answer what is known of the endpoints it asks about."""
        for endpoint, limit in request.learned.items():
            self._known[endpoint] = LearnedBudget(
                limit=limit, learned_at=workflow.now(), run_id=request.run_id
            )
        return {e: self._known[e] for e in request.endpoints if e in self._known}

    @workflow.query
    def known(self) -> dict[str, LearnedBudget]:
        return self._known
