"""The provider ledger's side of a run's connection budgets: resolve which endpoint each model
reaches (under the workspace's environment: the base URL is often in its .env), and exchange
what the run learned for what earlier runs learned (workflows/ledgers/provider_ledger.py, started on
first use)."""

from __future__ import annotations

from temporalio import activity
from temporalio.common import WorkflowIDConflictPolicy

from steward.activities.workspace.dotenv_files import workspace_environment
from steward.workflows.activity_io import (
    BudgetAnswer,
    BudgetCall,
    BudgetExchange,
    ProviderLedgerInput,
)
from steward.workflows.contracts import WORKFLOW_TASK_QUEUE
from steward.workflows.ledgers.provider_ledger import PROVIDER_LEDGER_ID, ProviderLedger
from steward.workflows.names import Activity
from steward.workflows.policy.provider_budget import endpoint_of


def endpoints_of(call: BudgetCall) -> dict[str, str]:
    environ = workspace_environment(call.workspace)
    return {model: endpoint_of(model, environ) for model in call.models}


@activity.defn(name=Activity.EXCHANGE_PROVIDER_BUDGETS)
async def exchange_provider_budgets(call: BudgetCall) -> BudgetAnswer:
    endpoints = endpoints_of(call)
    handle = await activity.client().start_workflow(
        ProviderLedger.run,
        ProviderLedgerInput(),
        id=PROVIDER_LEDGER_ID,
        task_queue=WORKFLOW_TASK_QUEUE,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    known = await handle.execute_update(
        ProviderLedger.exchange,
        BudgetExchange(
            run_id=call.run_id,
            endpoints=sorted(set(endpoints.values()) | set(call.learned)),
            learned=call.learned,
        ),
    )
    return BudgetAnswer(endpoints=endpoints, known=known)
