"""Steward's layer rules, checked by reading the source with `ast` (nothing under test is imported).

A tree (the repository root: pyproject.toml's `[tool.setuptools] package-dir` maps each
`steward.*` package to its folder) goes in, a list of `Violation`s comes out. The rules
(README, ARCHITECTURE.md "Repository layout"):

* no import circle between our modules, lazy imports inside functions included;
* no private name (`_x`, dunders aside) taken from another module;
* arrows point one way: workflows -> itself; activities -> workflows; worker -> workflows,
  activities; cli -> workflows, worker (never activities, never inspect_ai/inspect_scout);
  nothing installed imports the repo-only packages (harness, bench, tests);
* steward.workflows does no I/O and is deterministic: it imports only what
  `WORKFLOW_ALLOWED_IMPORTS` lists and never calls open()/print()/datetime.now() and the like.

Imports under `if TYPE_CHECKING:` never run, so they are not imports here.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

TOP = "steward"
LAYERS = ("workflows", "activities", "worker", "cli")

# Which of our layers each layer may import (itself included).
MAY_IMPORT: dict[str, frozenset[str]] = {
    "workflows": frozenset({"workflows"}),
    "activities": frozenset({"workflows", "activities"}),
    "worker": frozenset({"workflows", "activities", "worker"}),
    "cli": frozenset({"workflows", "worker", "cli"}),
}

# Third-party packages a layer must not import at all (lazily neither): the CLI stays thin and
# reaches Inspect only through the worker.
FORBIDDEN_THIRD_PARTY: dict[str, frozenset[str]] = {
    "cli": frozenset({"inspect_ai", "inspect_scout"}),
}

# Top-level packages that live only in the repository (not installed): importing them from
# steward.* works in a checkout and breaks for every user.
REPO_ONLY = frozenset({"harness", "bench", "tests"})

# Everything steward.workflows may import besides itself: exactly what its deterministic code
# uses, each with why it is safe inside a workflow. Anything else (os, pathlib, time, random,
# uuid, subprocess, httpx, inspect_ai, ...) belongs in an activity.
WORKFLOW_ALLOWED_IMPORTS: dict[str, str] = {
    "__future__": "compiler directives",
    "typing": "type annotations",
    "collections.abc": "abstract types",
    "dataclasses": "plain records",
    "datetime": "date arithmetic; the clock itself (now/utcnow/today) is refused below",
    "re": "pure text matching",
    "fnmatch": "pure pattern matching",
    "math": "pure arithmetic",
    "hashlib": "stable digests of workflow data",
    "json": "serialising in memory (open() is refused, so it cannot read files)",
    "asyncio": "gather/wait on Temporal's deterministic workflow event loop",
    "pydantic": "the contracts",
    "temporalio.workflow": "the workflow API (workflow.now() is the clock)",
    "temporalio.common": "retry policies, search attribute keys",
    "temporalio.exceptions": "activity/application errors",
}

# Builtins a workflow must not call: I/O, and hash() (salted per process for str, so a
# replay on another worker would decide differently).
WORKFLOW_FORBIDDEN_CALLS: dict[str, str] = {
    "open": "file I/O",
    "print": "console I/O",
    "input": "console I/O",
    "hash": "per-process salted, so a replay elsewhere differs (use hashlib)",
}
CLOCK_METHODS = frozenset({"now", "utcnow", "today"})
CLOCK_CLASSES = frozenset({"datetime", "date"})


@dataclass(frozen=True)
class Violation:
    file: str  # relative to the tree's root
    line: int
    kind: str  # "circle", "private-name", "layer", "workflow-io"
    message: str  # what is wrong and the fix

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: [{self.kind}] {self.message}"


@dataclass(frozen=True)
class ImportRef:
    """One import statement's source module, made absolute ("os", "steward.worker.connect")."""

    line: int
    module: str
    names: tuple[str, ...] = ()  # the names of a `from ... import`; () for `import x`
    bound: tuple[tuple[str, str], ...] = ()  # (local name, what it names) of each alias


@dataclass
class Module:
    name: str  # steward.activities.scan.scan
    file: str  # activities/scan/scan.py, relative to the root
    is_package: bool
    imports: list[ImportRef] = field(default_factory=list)
    # `name.attr` reads whose attr is private: (line, name, attr)
    private_reads: list[tuple[int, str, str]] = field(default_factory=list)
    calls: list[ast.Call] = field(default_factory=list)

    @property
    def layer(self) -> str:
        return layer_of(self.name)


@dataclass
class SourceTree:
    root: Path
    modules: dict[str, Module]

    def targets(self, ref: ImportRef) -> list[str]:
        """Our modules an import executes: `from pkg import sub` reaches the submodule, `from
        mod import name` the module."""
        if not ref.names:
            return [ref.module] if ref.module in self.modules else []
        found = []
        for name in ref.names:
            sub = f"{ref.module}.{name}"
            if sub in self.modules:
                found.append(sub)
            elif ref.module in self.modules:
                found.append(ref.module)
        return list(dict.fromkeys(found))


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == TOP else ""


def read_tree(root: Path) -> SourceTree:
    """Parse every .py file of the packages that pyproject.toml maps into `steward`."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    package_dirs: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    modules: dict[str, Module] = {}
    for package, folder in package_dirs.items():
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root / folder)
            parts = [package, *relative.with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            name = ".".join(parts)
            module = Module(name=name, file=str(path.relative_to(root)), is_package=is_package)
            _read(module, ast.parse(path.read_text(), filename=str(path)))
            modules[name] = module
    return SourceTree(root=root, modules=modules)


def check(root: Path) -> list[Violation]:
    tree = read_tree(root)
    return [
        *find_circles(tree),
        *find_private_names(tree),
        *find_layer_breaches(tree),
        *find_workflow_io(tree),
    ]


# --- walking the source ------------------------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node that can run, in source order: all of them except the body of
    `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(reversed(node.orelse))
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _absolute(module: Module, level: int, written: str | None) -> str:
    """`from ..x import y` in `module`, made absolute."""
    if level == 0:
        return written or ""
    base = module.name.split(".")
    if not module.is_package:
        base.pop()
    if level > 1:
        base = base[: -(level - 1)]
    return ".".join([*base, written] if written else base)


def _read(module: Module, tree: ast.Module) -> None:
    """One pass over the file: its imports, private attribute reads and calls."""
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = ((alias.asname, alias.name),) if alias.asname else ()
                module.imports.append(ImportRef(node.lineno, alias.name, bound=bound))
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node.level, node.module)
            module.imports.append(
                ImportRef(
                    node.lineno,
                    source,
                    tuple(alias.name for alias in node.names),
                    tuple(
                        (alias.asname or alias.name, f"{source}.{alias.name}")
                        for alias in node.names
                    ),
                )
            )
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and _is_private(node.attr)
        ):
            module.private_reads.append((node.lineno, node.value.id, node.attr))
        elif isinstance(node, ast.Call):
            module.calls.append(node)


def _in_order(violations: list[Violation]) -> list[Violation]:
    return sorted(violations, key=lambda v: (v.file, v.line, v.message))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


# --- rule 1: no circles ------------------------------------------------------------------


def find_circles(tree: SourceTree) -> list[Violation]:
    """One violation per strongly connected group of modules, showing one circle in it."""
    edges: dict[str, dict[str, int]] = {name: {} for name in tree.modules}
    for module in tree.modules.values():
        for ref in module.imports:
            for target in tree.targets(ref):
                if target != module.name:
                    edges[module.name].setdefault(target, ref.line)
    violations = []
    for group in _strongly_connected(edges):
        if len(group) < 2:
            continue
        circle = _shortest_circle(min(group), edges, group)
        hops = [
            f"{tree.modules[a].file}:{edges[a][b]} imports {b}"
            for a, b in zip(circle, circle[1:], strict=False)
        ]
        first = tree.modules[circle[0]]
        violations.append(
            Violation(
                file=first.file,
                line=edges[circle[0]][circle[1]],
                kind="circle",
                message=(
                    "import circle: "
                    + "; ".join(hops)
                    + (
                        f" (modules in the knot: {', '.join(sorted(group))})"
                        if len(group) > 2
                        else ""
                    )
                    + ". Fix: move what both sides need into one module they both import (or into"
                    " the lower one), so the arrows point one way; a lazy import inside a"
                    " function still closes the circle."
                ),
            )
        )
    return _in_order(violations)


def _strongly_connected(edges: dict[str, dict[str, int]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on long chains)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[set[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


def _shortest_circle(start: str, edges: dict[str, dict[str, int]], group: set[str]) -> list[str]:
    """start -> ... -> start, the fewest hops, inside the group."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in edges[node]:
                if child not in group:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is in a circle but none was found")


# --- rule 2: no private names across modules ----------------------------------------------


def find_private_names(tree: SourceTree) -> list[Violation]:
    """`from steward.x import _name` (relative too) in another module, or `x._name` on a module
    of ours bound by an import."""
    violations = []
    for module in tree.modules.values():
        module_aliases: dict[str, str] = {}  # local name -> our module it is bound to
        for ref in module.imports:
            module_aliases |= {local: what for local, what in ref.bound if what in tree.modules}
            if ref.module == module.name or not (ref.module == TOP or layer_of(ref.module)):
                continue
            for name in ref.names:
                if _is_private(name):
                    violations.append(_private(module, ref.line, name, ref.module))
        for line, local, attr in module.private_reads:
            if local in module_aliases:
                violations.append(_private(module, line, attr, module_aliases[local]))
    return _in_order(violations)


def _private(module: Module, line: int, name: str, owner: str) -> Violation:
    return Violation(
        file=module.file,
        line=line,
        kind="private-name",
        message=(
            f"{module.name} uses {owner}'s private name {name}. Fix: make it public (rename to"
            f" {name.lstrip('_')} at its definition and every use) or move it to where it is used."
        ),
    )


# --- rule 3: arrows point one way --------------------------------------------------------


def find_layer_breaches(tree: SourceTree) -> list[Violation]:
    violations = []
    for module in tree.modules.values():
        allowed = MAY_IMPORT.get(module.layer, frozenset())
        forbidden = FORBIDDEN_THIRD_PARTY.get(module.layer, frozenset())
        for ref in module.imports:
            top = ref.module.split(".")[0]
            targets = tree.targets(ref) or ([ref.module] if top == TOP else [])
            for target in targets:
                layer = layer_of(target)
                if layer and layer not in allowed:
                    violations.append(
                        Violation(
                            module.file,
                            ref.line,
                            "layer",
                            f"{module.name} ({module.layer}) imports {target} ({layer}); "
                            f"{module.layer} may import only {', '.join(sorted(allowed))}. Fix: "
                            f"move the code both need down into the lowest layer that uses it "
                            f"(the upper one may then import it from there).",
                        )
                    )
            if top in forbidden:
                violations.append(
                    Violation(
                        module.file,
                        ref.line,
                        "layer",
                        f"{module.name} imports {ref.module}; {module.layer} never imports "
                        f"{top} (not even lazily). Fix: reach it through steward.worker, which "
                        f"runs Inspect, and pass plain data back.",
                    )
                )
            if top in REPO_ONLY:
                violations.append(
                    Violation(
                        module.file,
                        ref.line,
                        "layer",
                        f"{module.name} imports {ref.module}, which exists only in the "
                        f"repository (not installed). Fix: move what it needs into steward.",
                    )
                )
    return _in_order(violations)


# --- rule 4: workflows do no I/O ---------------------------------------------------------


def _workflow_import_allowed(module: str) -> bool:
    if module.split(".")[0] == TOP:
        return True  # ours: find_layer_breaches judges those
    return any(module == ok or module.startswith(ok + ".") for ok in WORKFLOW_ALLOWED_IMPORTS)


def find_workflow_io(tree: SourceTree) -> list[Violation]:
    violations = []
    for module in tree.modules.values():
        if module.layer != "workflows":
            continue
        for ref in module.imports:
            # `from temporalio import workflow` imports temporalio.workflow
            sources = [f"{ref.module}.{n}" for n in ref.names] if ref.module == "temporalio" else []
            for source in sources or [ref.module]:
                if not _workflow_import_allowed(source):
                    violations.append(
                        Violation(
                            module.file,
                            ref.line,
                            "workflow-io",
                            f"{module.name} imports {source}; workflows do no I/O and stay "
                            f"deterministic, so they import only themselves and "
                            f"WORKFLOW_ALLOWED_IMPORTS (tests/layer_rules.py). Fix: do this in "
                            f"an activity and pass the result in; if {source} is pure and "
                            f"deterministic, add it there with the reason.",
                        )
                    )
        for node in module.calls:
            why = _forbidden_call(node.func)
            if why:
                violations.append(
                    Violation(
                        module.file,
                        node.lineno,
                        "workflow-io",
                        f"{module.name} calls {why}. Fix: use workflow.now() for the time; "
                        f"do any I/O in an activity.",
                    )
                )
    return _in_order(violations)


def _forbidden_call(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name) and func.id in WORKFLOW_FORBIDDEN_CALLS:
        return f"{func.id}() ({WORKFLOW_FORBIDDEN_CALLS[func.id]})"
    if isinstance(func, ast.Attribute) and func.attr in CLOCK_METHODS:
        owner = func.value
        owner_name = (
            owner.id
            if isinstance(owner, ast.Name)
            else owner.attr
            if isinstance(owner, ast.Attribute)
            else ""
        )
        if owner_name in CLOCK_CLASSES:
            return f"{owner_name}.{func.attr}() (the machine's clock, which a replay does not see)"
    return None
