"""The provider ledger's side of a run's connection budgets: resolve which endpoint each model
reaches (under the workspace's environment: the base URL is often in its .env), and exchange
what the run learned for what earlier runs learned (workflows/provider_ledger.py, started on
first use)."""

from __future__ import annotations

from temporalio import activity
from temporalio.common import WorkflowIDConflictPolicy

from workflows.activity_io import BudgetAnswer, BudgetCall, BudgetExchange, ProviderLedgerInput
from workflows.contracts import WORKFLOW_TASK_QUEUE
from workflows.names import Activity
from workflows.provider_budget import endpoint_of
from workflows.provider_ledger import PROVIDER_LEDGER_ID, ProviderLedger

from .dotenv_files import workspace_environment


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
