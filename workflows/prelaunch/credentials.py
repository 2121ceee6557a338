"""Which credentials each model provider needs, and whether the workers will see them.

Per-task workers are started by the Steward worker, not by the user's shell: a key exported
only in that shell never reaches them. The policy here is pure (provider -> variable names);
the check runs as an activity on the host that starts the workers, inside the tiny
`CredentialsCheck` workflow, so the answer is the workers' environment, not the CLI's. Only
variable names and where they were found travel: never a value.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from steward.workflows.names import Activity, WorkflowType

# provider -> the variables it needs: each inner list is satisfied by any one of its names.
PROVIDER_VARIABLES: dict[str, list[list[str]]] = {
    "openai": [["OPENAI_API_KEY", "AZUREAI_OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"]],
    "anthropic": [["ANTHROPIC_API_KEY", "AZUREAI_ANTHROPIC_API_KEY", "AZURE_ANTHROPIC_API_KEY"]],
    "google": [
        ["GOOGLE_API_KEY", "GEMINI_API_KEY", "VERTEX_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"]
    ],
    "mistral": [["MISTRAL_API_KEY", "AZUREAI_MISTRAL_API_KEY", "AZURE_MISTRAL_API_KEY"]],
    "grok": [["XAI_API_KEY", "GROK_API_KEY"]],
    "groq": [["GROQ_API_KEY"]],
    "together": [["TOGETHER_API_KEY"]],
    "fireworks": [["FIREWORKS_API_KEY"]],
    "openrouter": [["OPENROUTER_API_KEY"]],
    "perplexity": [["PERPLEXITY_API_KEY"]],
    "deepseek": [["DEEPSEEK_API_KEY"]],
    "moonshot": [["MOONSHOT_API_KEY"]],
    "sambanova": [["SAMBANOVA_API_KEY"]],
    "azureai": [["AZUREAI_API_KEY", "AZURE_API_KEY"]],
    "cloudflare": [["CLOUDFLARE_ACCOUNT_ID"], ["CLOUDFLARE_API_TOKEN", "CLOUDFLARE_API_KEY"]],
    "hf-inference-providers": [["HF_TOKEN"]],
    "litellm": [["LITELLM_API_KEY", "LITELLM_PROXY_API_KEY"]],
}
# Providers whose credentials come from a chain Steward cannot see into (files, instance roles,
# local servers): not checked, and said so.
UNCHECKED = {"bedrock", "sagemaker", "vertex", "azure", "vllm", "sglang", "ollama", "meta"}


class Requirement(BaseModel):
    provider: str
    models: list[str]
    groups: list[list[str]]  # all groups needed; any one name of a group will do


class CredentialsRequest(BaseModel):
    workspace: str
    host_queue: str  # the host whose Steward worker starts the run's workers
    requirements: list[Requirement]


class Found(BaseModel):
    variable: str
    source: str  # "the workspace's .env (path)" or "the Steward worker's environment"


class CredentialsReport(BaseModel):
    found: list[Found] = Field(default_factory=list)
    missing: list[Requirement] = Field(default_factory=list)  # only the unmet groups


def provider_of(model: str) -> str:
    return model.split("/", 1)[0]


def requirements_for(models: list[str]) -> tuple[list[Requirement], list[str]]:
    """(what the models' providers need, the providers that cannot be checked)."""
    needs: dict[str, Requirement] = {}
    unchecked: set[str] = set()
    for model in sorted(set(models)):
        provider = provider_of(model)
        if provider == "openai-api":
            # openai-api/<service>/<model> reads <SERVICE>_API_KEY and <SERVICE>_BASE_URL.
            service = model.split("/")[1] if model.count("/") >= 2 else ""
            if not service:
                continue
            env = service.upper().replace("-", "_")
            key, groups = f"openai-api/{service}", [[f"{env}_API_KEY"], [f"{env}_BASE_URL"]]
        elif provider in PROVIDER_VARIABLES:
            key, groups = provider, PROVIDER_VARIABLES[provider]
        else:
            if provider in UNCHECKED:
                unchecked.add(provider)
            continue  # offline, local and custom providers need nothing we can name
        requirement = needs.setdefault(key, Requirement(provider=key, models=[], groups=groups))
        requirement.models.append(model)
    return list(needs.values()), sorted(unchecked)


def unmet(requirements: list[Requirement], visible: set[str]) -> list[Requirement]:
    """The requirements with groups none of whose names is visible (only those groups)."""
    missing = []
    for requirement in requirements:
        groups = [g for g in requirement.groups if not visible.intersection(g)]
        if groups:
            missing.append(requirement.model_copy(update={"groups": groups}))
    return missing


def refusal(report: CredentialsReport, workspace: str) -> str | None:
    """One sentence naming the missing variables and the fix, or None."""
    if not report.missing:
        return None
    needs = "; ".join(
        f"{r.provider} ({', '.join(r.models)}) needs "
        + " and ".join(" or ".join(group) for group in r.groups)
        for r in report.missing
    )
    return (
        f"The run's workers would not see the credentials their models need: {needs}. The "
        f"workers are started by the Steward worker, not by your shell, so put them in "
        f"{workspace}/.env (or a parent directory's .env), or pass --no-env-check to launch anyway."
    )


@workflow.defn(name=WorkflowType.CREDENTIALS_CHECK)
class CredentialsCheck:
    """Ask the host that starts the workers which credentials they would see (names only)."""

    @workflow.run
    async def run(self, request: CredentialsRequest) -> CredentialsReport:
        return await workflow.execute_activity(
            Activity.CHECK_CREDENTIALS,
            request,
            task_queue=request.host_queue,
            start_to_close_timeout=timedelta(seconds=30),
            schedule_to_close_timeout=timedelta(seconds=60),
            result_type=CredentialsReport,
        )
