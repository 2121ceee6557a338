"""`steward collect` for people, pure: one sentence per journal event and per open decision,
each decision with the command that answers it, and the next step. `collect --json` is the
same document, unsaid (cli/cmd_decisions.py); `steward wait` says its events with the same
sentences (cli/agent_events.py).

A sentence names what happened in the words of vocabulary.py; an event this module has no
sentence for is still said on one line ("<event>: key value, key value."), never as a dict.
"""

from __future__ import annotations

from typing import Any

from steward.workflows.contracts import TERMINAL_PHASES
from steward.workflows.views.vocabulary import phase_meaning

# journal event -> its sentence; {name} is the event's field, said by `_said`; {because} is
# " (reason)" when the event gives a reason. A field the event lacks reads "?".
EVENT_SENTENCES: dict[str, str] = {
    # the run's life
    "launched": "The run was launched by {by} from {definition}.",
    "captured": "The definition resolved to {tasks} ({samples} samples); logs go to {log_dir}.",
    "reused from store": "Reused from the log store, not run again: {tasks}.",
    "count not read": "The samples done could not be counted: {problem}.",
    "tend": "Tend {tend} done: {phase}, {samples_done}/{samples_total} samples.",
    "tend failed": "A tend failed: {problem}.",
    "tend recovered": "Tends work again (they had stopped short: {problem}).",
    "finished": "The run finished ({samples} samples); it waits for signoff.",
    "signed off": "The run was signed off by {by}.",
    "cancel requested": "A cancel was asked for by {by}{because}.",
    "cancelled": "The run was cancelled{because}.",
    "orphaned": "The run was orphaned{because}.",
    "failed": "The run failed: {error}.",
    "paused": "The run was paused by {by}{because}.",
    "resumed": "The run was resumed by {by}{because}.",
    "amended": "The run was changed by {by}: {rows}.",
    "drift": "The definition was edited but not launched; `steward launch` would: {changes}.",
    "drift cleared": "The definition matches the run again{because}.",
    "phase changed": "The run is now {to} (it was {from}).",
    # task workers
    "spawning": "Starting task worker {worker} for {tasks}.",
    "spawned": "Task worker {worker} started for {tasks} (pid {pid}).",
    "spawn failed": "Task worker {worker} could not start on {host}: {problem}.",
    "worker exited": "Task worker {worker} exited{how_said}.",
    "worker stopped": "Task worker {worker} was stopped{because}.",
    "workers not stopped": "Task workers {workers} on {host} could not be stopped: {problem}.",
    "worker hung": "Task worker {worker} hung: {detail}.",
    "worker answered again": "Task worker {worker} answers again ({detail}).",
    "task complete": "Task {task} is complete ({samples} samples).",
    "task stalled": "Task {task} stalled{because}.",
    "rerun queued": "Task {task} will run again for the samples ruled to re-run.",
    "sandboxes reaped": "Left-over sandboxes were removed: {containers}.",
    # decisions and rulings
    "error class": "A new error class {error_class} ({kind}): {title}.",
    "anomalies": "{new} more sample(s) joined error class {error_class}.",
    "decision raised": "Decision {decision} raised for the {owner}: {question}",
    "proposed": "{decision}: {by} proposed {verdict}{because}; the operator rules on it as "
    "{raised}.",
    "ruled": "{decision} ruled {verdict} by {by}{because}.",
    "ruled by standing rule": "{error_class} ruled {verdict} by a standing rule.",
    "ruling applied": "The ruling {verdict} on {error_class} was carried out "
    "({instances} sample(s)).",
    "ruling not applied": "A ruling could not be carried out: {problems}.",
    "ruling skipped": "The ruling {verdict} on {error_class} skipped {samples}{because}.",
    "decision closed": "{decision} closed by the run{because}.",
    "no longer holds": "Error class {error_class} no longer holds for {instances}{because}.",
    "routed to operator": "{decision} routed to the operator too{because}.",
    "healed": "{error_class} healed: {count} sample(s) completed cleanly.",
    "rerun deferred": "The rerun of {error_class} waits until {until}.",
    "deferral dropped": "The wait for the provider on {error_class} was dropped{because}.",
    # the integrity scan
    "scanned": "A scan ended: {logs} log(s) scanned, {findings} finding(s).",
    "scan failed": "A scan failed: {problem}.",
    "scan widened": "The scan {scan} may now open {connections} connection(s).",
    "scan connections": "The scan may open {connections} connection(s).",
    # providers, connections, the ramp
    "connection budget": "Provider {endpoint}: the run's task workers may hold {limit} "
    "connection(s) together (they start at {start}).",
    "connection ceiling not applied": "A task worker's connection ceiling was not applied: "
    "{problems}.",
    "provider ledger unreachable": "The provider ledger was not reached (each worker keeps one "
    "process's default): {problem}.",
    "provider stuck": "{model} stopped answering task worker {worker}: {detail}.",
    "provider answers again": "{model} answers task worker {worker} again.",
    "provider did not answer": "The provider did not answer for {error_class} ({problem}); "
    "next probe in {next_probe_in_s}s.",
    "provider answered": "{provider} answers again after {waited_s}s: {then}.",
    "setpoint sized to budget": "Task {task}'s setpoint went from {previous} to {setpoint} to "
    "fit {endpoint}'s {budget} connections.",
    "ramp up": "Task {task}'s setpoint rose from {previous} to {setpoint}{because}.",
    "ramp cut": "Task {task}'s setpoint was cut from {previous} to {setpoint}{because}.",
    "ramp narrow": "Task {task}'s setpoint went from {previous} to {setpoint}{because}.",
    "connection budget lowered": "{endpoint}'s connection budget was lowered from {previous} "
    "to {limit}{because}.",
    "connection budget raised": "{endpoint}'s connection budget was raised from {previous} to "
    "{limit}{because}.",
    "setpoint not applied": "A setpoint could not be applied: {problems}.",
    "budget clamp": "Task {task}'s setpoint stays at {setpoint}: the sandbox budget is {budget}.",
    "ramp hold": "The ramp was held by {by}{because}.",
    "ramp resumed": "The ramp was resumed by {by}.",
    "ramp range changed": "The ramp's range changed from {previous} to {now}.",
    # capacity and cost
    "queued": "The run is queued at position {position}{because}.",
    "admitted": "The run was admitted ({how}), holding {held}.",
    "capacity bound": "Capacity domain {domain} is bounded by {limits} (from {source}).",
    "capacity escalated": "The run now holds {held}.",
    "escalation refused": "More capacity was refused{because}; the run keeps {held}.",
    "quota exceeded": "The capacity quota was exceeded: {detail_said}.",
    "capacity released": "The run's capacity was given back{because}.",
    "capacity release failed": "The run's capacity could not be given back: {problem}.",
    "capacity returned": "The run gave capacity back and now holds {held}.",
    "cost cap crossed": "The cost cap was crossed: {problem}.",
    # hosts
    "host lost": "Host {host} was lost.",
    "host back": "Host {host} is heard again.",
    "host not observed": "Host {host} could not be looked at: {problem}.",
    "host refused": "Host {host} takes none of this run's task workers: {reason}.",
    "host accepted": "Host {host} can see the run's files again and may take its task workers.",
    "host not asked": "Host {host} was left out of this placement: {problem}.",
    "host registry not reached": "The host registry was not reached: {problem}.",
    # the workspace, options, notices
    "workspace not written": "The workspace could not be written: {problem}.",
    "workspace writable again": "The workspace can be written again.",
    "options unreadable": "The options could not be read (the last good ones are kept): "
    "{problem}.",
    "tend interval changed": "The tend interval changed from {previous}s to {now}s.",
    "watch limits changed": "The watch limits changed from {previous} to {now}.",
    "timer armed": "The timer was armed by {by}: a tend every {interval}s.",
    "timer disarmed": "The timer was disarmed by {by}: the run tends on events only.",
    "notified": "The operator was notified ({kinds}).",
    "notification not delivered": "A notification was not delivered: {problem}.",
}

# What a person does about an event (the command that answers it), when something is theirs.
NEXT_STEPS: dict[str, str] = {
    "task stalled": "its decision is below; `steward show` a failed sample, then `steward rule`",
    "finished": "`steward signoff --check`, then `steward signoff --by NAME`",
    "paused": "`steward resume` continues",
    "ramp hold": "`steward ramp resume` lets the setpoints climb again",
    "cost cap crossed": "raise the cap in _steward.yaml, or `steward resume` to go past it",
    "host lost": "start `steward worker` on it again, or let its tasks move",
    "workspace not written": "free space or fix permissions; the next tend writes everything",
    "drift": "`steward launch` applies the edit",
    "spawn failed": "`steward doctor` checks the host",
}


# An event whose next step a later event makes moot (its step is then not said).
SETTLED_BY: dict[str, frozenset[str]] = {
    "paused": frozenset({"resumed"}),
    "ramp hold": frozenset({"ramp resumed"}),
    "finished": frozenset({"signed off", "cancelled", "launched"}),
    "workspace not written": frozenset({"workspace writable again"}),
    "host lost": frozenset({"host back"}),
    "drift": frozenset({"drift cleared", "launched"}),
    "cost cap crossed": frozenset({"resumed"}),
    "task stalled": frozenset({"rerun queued", "finished"}),
}


class _Particulars(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def _said(value: Any) -> str:
    """A field's value in words: lists joined, mappings as `key value`, nothing as 'none'."""
    if value is None or value == [] or value == {}:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ", ".join(_said(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_said(v)}" for k, v in value.items())
    return str(value)


_LEFT_OUT = ("seq", "at", "event")


def _how(event: dict[str, Any]) -> str:
    """How a worker exited, without naming the worker twice."""
    how = _said(event["how"]) if event.get("how") else ""
    worker = str(event.get("worker", ""))
    if worker and how.startswith(f"worker {worker}"):
        how = how[len(f"worker {worker}") :].strip()
        how = how.removeprefix("(").split(")", 1)[-1].strip() if how.startswith("(") else how
    if how.startswith("exited"):
        rest = how.removeprefix("exited").strip()
        return f" {rest}" if rest else ""
    return f" ({how})" if how else ""


def event_sentence(event: dict[str, Any]) -> str:
    """One journal event (or `phase changed`) as one sentence for a person."""
    name = str(event.get("event", ""))
    fields = {k: v for k, v in event.items() if k not in _LEFT_OUT}
    template = EVENT_SENTENCES.get(name)
    if template is None:
        rest = "; ".join(f"{k.replace('_', ' ')} {_said(v)}" for k, v in fields.items())
        return f"{name[:1].upper()}{name[1:]}" + (f": {rest}." if rest else ".")
    words = _Particulars({k: _said(v) for k, v in fields.items()})
    reason = event.get("reason")
    words["because"] = f" ({_said(reason)})" if reason else ""
    words["how_said"] = _how(event)
    words["detail_said"] = _said(fields) if fields else "no detail"
    return template.format_map(words)


def next_step(event: dict[str, Any], later: list[dict[str, Any]] | None = None) -> str | None:
    """What a person does about this event, with the command, or None (also when an event in
    `later`, the events after it, settled it)."""
    name = str(event.get("event", ""))
    settled = SETTLED_BY.get(name, frozenset())
    if any(e.get("event") in settled for e in later or []):
        return None
    return NEXT_STEPS.get(name)


def decision_sentence(decision: dict[str, Any]) -> str:
    """An open decision (as `collect --json` has it) in one sentence, with the command that
    answers it for its owner now."""
    owner = decision.get("owner", "?")
    whose = f"the {owner}'s"
    if decision.get("routed"):
        because = decision.get("routed_because") or "no agent looked in time"
        whose = f"the agent's, routed to the operator: {because}"
    question = str(decision.get("question", "")).rstrip()
    if question and question[-1] not in ".?!":
        question += "."
    command = decision.get("command") or (
        f"steward rule {decision.get('id')} {'|'.join(decision.get('verdicts', []))}"
    )
    return f"Decision {decision.get('id')} ({whose}): {question} Answer: `{command}`"


def collect_headline(document: dict[str, Any]) -> str:
    """Where the run stands and how much is new, in one line."""
    phase = str(document.get("phase", "?"))
    decisions, events = len(document.get("decisions", [])), len(document.get("events", []))
    return (
        f"Run {phase} ({phase_meaning(phase)}): {decisions} open decision(s), {events} new "
        f"event(s) since {document.get('since', 0)} (cursor now {document.get('cursor', 0)})."
    )


def closing_step(document: dict[str, Any]) -> str:
    """The next step for the person reading `collect`, with its command."""
    phase = str(document.get("phase", ""))
    if document.get("decisions"):
        return (
            "Next: answer each decision with its command; `steward collect` again shows what "
            "changed (`steward show TASK/ID` shows a sample)."
        )
    if phase in TERMINAL_PHASES:
        return f"Next: nothing; the run has ended ({phase}). `steward launch` starts a new run."
    if phase == "finished":
        return "Next: `steward signoff --check`, then `steward signoff --by NAME`."
    return "Next: nothing needs you now; `steward wait --by NAME` returns when something does."


MOST_EVENTS = 30  # the newest events collect says; `collect --json` has them all


def collect_lines(document: dict[str, Any]) -> list[str]:
    """`steward collect` for a person: the headline, one sentence per open decision (with its
    command), one per new event (with what to do, when something is the reader's), then the
    next step."""
    lines = [collect_headline(document)]
    if document.get("unattended"):
        lines.append(
            "Some of the agent's items went to the operator too: no agent collected in time."
        )
    decisions = document.get("decisions", [])
    if decisions:
        lines.append("")
        lines += [decision_sentence(d) for d in decisions]
    lines += [f"Standing rule for agents: {rule}" for rule in document.get("policies", [])]
    events = document.get("events", [])
    if events:
        lines.append("")
        if len(events) > MOST_EVENTS:
            lines.append(
                f"({len(events) - MOST_EVENTS} earlier event(s) not shown; "
                "`steward collect --json` has them all)"
            )
        ended = document.get("phase") in TERMINAL_PHASES
        shown = events[-MOST_EVENTS:]
        for at, event in enumerate(shown):
            step = None if ended else next_step(event, shown[at + 1 :])
            said = event_sentence(event)
            lines.append(f"#{event.get('seq')} {said}" + (f" Next: {step}." if step else ""))
    lines += ["", closing_step(document)]
    return lines
