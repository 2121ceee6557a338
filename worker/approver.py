"""Tool-call approvals answered through Steward: the `steward` approver.

Steward runs each eval task in a detached worker (no terminal, stdin is /dev/null), where
Inspect's interactive `human` approver cannot ask anybody. This approver hands the decision to
Steward through files instead; an operator answers it with `steward rule ID approve|reject|
terminate` and the waiting sample carries on (other samples keep running meanwhile).

File protocol (directory: `$STEWARD_APPROVALS_DIR`, else `<cwd>/.steward/approvals`):

* Request, written atomically by the approver as `<dir>/<request_id>.json`::

      {"id", "task", "sample_id", "epoch", "eval_id", "tool", "arguments", "message",
       "requested_at", "pid"}

* Answer, written by Steward as `<dir>/<request_id>.answer.json`::

      {"decision": "approve"|"reject"|"terminate"|"escalate", "explanation", "by"}

The approver polls for the answer every `POLL_INTERVAL` seconds and deletes neither file.
`request_id` is a hash of the tool call's identity within its sample, so a restarted wait for
the same call (a retried eval, a resumed sample) reuses the request and any answer it has.

Importing this module registers the approver as `steward`; with `STEWARD_WORKER=1` (set by
Steward in the processes it spawns) it also answers for the name `human`, so an existing
`approval="human"` policy works unattended.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from inspect_ai._util.registry import RegistryInfo, registry_add, registry_tag
from inspect_ai.approval import Approval, ApprovalDecision, Approver
from inspect_ai.model import ChatMessage
from inspect_ai.tool import ToolCall, ToolCallView

from steward.activities.processes.runner_launch import APPROVALS_DIR_ENV, WORKER_ENV
from steward.workflows.policy.layout import approvals_dir_of

logger = logging.getLogger(__name__)

APPROVER_NAME = "steward"
POLL_INTERVAL = 0.5
MESSAGE_LIMIT = 2000
ANSWER_DECISIONS: frozenset[str] = frozenset({"approve", "reject", "terminate", "escalate"})


def approvals_dir() -> Path:
    """Where requests and answers live (created if missing)."""
    configured = os.environ.get(APPROVALS_DIR_ENV)
    directory = Path(configured or approvals_dir_of(str(Path.cwd())))
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def request_path(request_id: str, directory: Path | None = None) -> Path:
    return (directory or approvals_dir()) / f"{request_id}.json"


def answer_path(request_id: str, directory: Path | None = None) -> Path:
    return (directory or approvals_dir()) / f"{request_id}.answer.json"


def request_id_for(
    call_id: str,
    *,
    task: str,
    sample_id: str,
    epoch: int,
    model: str = "",
    eval_set_id: str | None = None,
) -> str:
    """A request id that is the same every time the same tool call is waited on.

    Deliberately not keyed on the eval id: Inspect gives every attempt of a task a fresh one
    (a retried eval, an eval-set retry after a worker restart), and a restarted wait must find
    the request (and answer) it left behind.
    """
    key = f"{eval_set_id or ''}/{task}/{model}/{sample_id}/{epoch}/{call_id}"
    return "appr-" + hashlib.sha1(key.encode()).hexdigest()[:12]


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


def _previous_requested_at(path: Path) -> str | None:
    """The original request time when a restarted wait finds its own request."""
    try:
        previous = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    value = previous.get("requested_at") if isinstance(previous, dict) else None
    return value if isinstance(value, str) else None


def read_answer(path: Path) -> Approval | None:
    """The answer in `path`, or None while there is none.

    Raises ValueError for an answer file that exists but is malformed.
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    data = json.loads(text)  # ValueError (JSONDecodeError) when malformed
    if not isinstance(data, dict):
        raise ValueError("answer is not a JSON object")
    decision = data.get("decision")
    if decision not in ANSWER_DECISIONS:
        raise ValueError(f"invalid decision: {decision!r}")
    explanation = data.get("explanation")
    if explanation is not None and not isinstance(explanation, str):
        raise ValueError("explanation must be a string or null")
    by = data.get("by")
    if by is not None and not isinstance(by, str):
        raise ValueError("by must be a string or null")
    return Approval(
        decision=decision,
        explanation=explanation,
        metadata={"by": by} if by else None,
    )


def _sample_context() -> dict[str, Any]:
    # deferred, as Inspect's own human approver does: `inspect_ai.log._samples` at module load
    # closes an import cycle (approval -> log -> transcript -> approval)
    from inspect_ai.log._samples import sample_active

    active = sample_active()
    if active is None:  # called outside a running sample (e.g. directly, in a script)
        return dict(task="", sample_id="", epoch=0, eval_id=None, model="", eval_set_id=None)
    return dict(
        task=active.task,
        sample_id=str(active.sample.id),
        epoch=active.epoch,
        eval_id=active.eval_id,
        model=active.model,
        eval_set_id=active.eval_set_id,
    )


async def request_approval(message: str, call: ToolCall, *, mark_waiting: bool = True) -> Approval:
    """Write the request for `call`, then wait (without blocking the loop) for its answer.

    `mark_waiting` records the wait on the running sample (Inspect's `awaiting_human`), which
    the control channel reports as activity `{type: "approval", detail: <tool function>}`;
    off only where the caller already holds that mark.
    """
    from inspect_ai.log._samples import awaiting_human

    context = _sample_context()
    directory = approvals_dir()
    request_id = request_id_for(
        call.id,
        task=context["task"],
        sample_id=context["sample_id"],
        epoch=context["epoch"],
        model=context["model"],
        eval_set_id=context["eval_set_id"],
    )
    request = request_path(request_id, directory)
    answer = answer_path(request_id, directory)
    _write_json_atomic(
        request,
        {
            "id": request_id,
            "task": context["task"],
            "sample_id": context["sample_id"],
            "epoch": context["epoch"],
            "eval_id": context["eval_id"],
            "tool": call.function,
            "arguments": call.arguments,
            "message": (message or "")[:MESSAGE_LIMIT],
            "requested_at": _previous_requested_at(request) or datetime.now(UTC).isoformat(),
            "pid": os.getpid(),
        },
    )
    logger.info("approval %s requested for %s (%s)", request_id, call.function, request)

    warned = False
    # counts as sample waiting (not working) time, too
    with awaiting_human("approval", call.function) if mark_waiting else nullcontext():
        while True:
            try:
                approval = read_answer(answer)
            except (OSError, ValueError) as ex:
                if not warned:
                    logger.warning("ignoring malformed approval answer %s: %s", answer, ex)
                    warned = True
                approval = None
            if approval is not None:
                logger.info("approval %s answered: %s", request_id, approval.decision)
                return approval
            await anyio.sleep(POLL_INTERVAL)


def _make_approver() -> Approver:
    async def approve(
        message: str,
        call: ToolCall,
        view: ToolCallView,
        history: list[ChatMessage],
    ) -> Approval:
        return await request_approval(message, call)

    return approve


def steward_approver() -> Approver:
    """Approver whose decisions are made by a Steward operator (`steward rule ID ...`)."""
    approve = _make_approver()
    registry_tag(steward_approver, approve, _STEWARD_INFO)
    return approve


# Registered under the literal name, not with `@approver`: Inspect prefixes the name of the
# package an installed (non-editable) extension lives in, and `approval="steward"` would then
# have to be spelled `steward/steward`.
_STEWARD_INFO = RegistryInfo(
    type="approver", name=APPROVER_NAME, metadata=dict(attribs={}, params=[])
)
registry_add(steward_approver, _STEWARD_INFO)


def human_redirect(
    choices: list[ApprovalDecision] = ["approve", "reject", "terminate"],  # noqa: B006
) -> Approver:
    """Stands in for Inspect's `human` approver inside Steward's workers.

    Accepts (and ignores) the `human` approver's `choices`, so existing policies resolve; the
    operator's answer is the decision.
    """
    approve = _make_approver()
    registry_tag(human_redirect, approve, _HUMAN_INFO, choices=choices)
    return approve


_HUMAN_INFO = RegistryInfo(
    type="approver", name="human", metadata=dict(attribs={}, params=["choices"])
)


def register_human_redirect() -> None:
    """Make Inspect's `human` approver defer to Steward in this process.

    Two parts, because a policy is resolved to approver instances when it is read:

    * Name: Inspect registers its own as `inspect_ai/human`, and a lookup of the bare name
      `human` tries that exact key before falling back to `inspect_ai/human`, so registering
      `human` shadows Inspect's for every policy resolved from now on (`approval="human"` on
      `eval()`/`eval_set()`, `name: human` in a policy file, an eval retry) while leaving
      Inspect's registration untouched. Instances keep the log name `human`, so the log still
      records the policy the user wrote. (Registered under the literal name, as `steward` is.)
    * Instances made earlier: a `Task(approval="human")` built before Inspect loads its entry
      points (a definition calling `eval_set([my_task()])` builds the task before `eval_set`
      runs) already holds Inspect's own approver. That one asks the ACP clients first, then
      its `panel_approval`, then the console (which raises EOFError on /dev/null); its
      `panel_approval` global is replaced so the panel step asks Steward instead. Inspect's
      approver already marks the sample as awaiting approval around all of it.
    """
    registry_add(human_redirect, _HUMAN_INFO)

    from inspect_ai.approval._human import approver as inspect_human

    async def panel_approval(
        message: str,
        call: ToolCall,
        view: ToolCallView,
        history: list[ChatMessage],
        choices: list[ApprovalDecision],
    ) -> Approval:
        return await request_approval(message, call, mark_waiting=False)

    inspect_human.panel_approval = panel_approval  # type: ignore[assignment]


def follow_environment() -> None:
    """In a task worker (`STEWARD_WORKER=1`), answer `human` approvals through Steward. Run at
    import and again by the definition runner: a worker forked from a server that imported
    this module earlier, under another environment, has its own environment only then."""
    if os.environ.get(WORKER_ENV) == "1":
        register_human_redirect()


follow_environment()
