"""Which credentials a run's models need, what is unmet, and the refusal sentence (pure; the
check on a live launch is in tests/e2e/test_credentials.py)."""

from __future__ import annotations

from steward.workflows.prelaunch.credentials import (
    CredentialsReport,
    Requirement,
    refusal,
    requirements_for,
    unmet,
)


def test_providers_map_to_their_variables():
    needs, unchecked = requirements_for(
        [
            "openai/gpt-4o",
            "openai/gpt-4o-mini",
            "anthropic/claude",
            "openai-api/my-svc/m",
            "steward/offline",
            "mockllm/model",
            "bedrock/x",
        ]
    )
    by = {r.provider: r for r in needs}
    assert set(by) == {"openai", "anthropic", "openai-api/my-svc"}
    assert by["openai"].models == ["openai/gpt-4o", "openai/gpt-4o-mini"]
    assert by["openai-api/my-svc"].groups == [["MY_SVC_API_KEY"], ["MY_SVC_BASE_URL"]]
    assert unchecked == ["bedrock"]
    missing = unmet(needs, {"AZUREAI_OPENAI_API_KEY", "MY_SVC_BASE_URL"})
    assert [(r.provider, r.groups) for r in missing] == [
        ("anthropic", by["anthropic"].groups),
        ("openai-api/my-svc", [["MY_SVC_API_KEY"]]),
    ]
    sentence = refusal(CredentialsReport(missing=missing), "/ws")
    assert "MY_SVC_API_KEY" in sentence and "/ws/.env" in sentence and "--no-env-check" in sentence
    assert refusal(CredentialsReport(), "/ws") is None
    assert Requirement(provider="x", models=[], groups=[]).groups == []
