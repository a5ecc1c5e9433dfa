"""The shape of the code base at one checkout, as Markdown tables: the same figures before and after a redesign.

This file is also the one home of the layer table (``SUBPACKAGE_LAYERS``, ``TOP_MODULE_LAYERS``, ``TRAINERS_LAYERS``,
``TRAINERS_TOP_MODULE_LAYERS``) and of the measurements ``tests/test_code_map.py`` turns into rules (imports and their
direction, cycles, file and function lengths, imports inside functions, what a module brings when imported); the test
loads it by path and keeps the allowances.

Run: .venv/bin/python scripts/code_shape.py [CHECKOUT] [--no-trace]
(CHECKOUT: a checkout's root, default the repository this script sits in; for another revision,
``git worktree add /tmp/shape-before REV`` and give that folder.)

1. Files and lines per folder: each subpackage of ``agentgym_bench/`` and of ``trainers/`` (with what lies below it),
   and the top-level modules of each; ``.py`` files only.
2. Imports running back up: every import statement between modules of ``agentgym_bench/`` and ``trainers/``, at
   module level or inside a function (or under ``if TYPE_CHECKING:``, marked), read from the syntax tree, relative
   imports resolved. One edge per (importing module, imported module). ``from P import name`` is an edge to
   ``P.name`` when that is a module, else to ``P``. Imports by string (``importlib``: registration's game table,
   cli's command table) are not seen. The layers, bottom to top, follow the data path (game rules ->
   core env -> LLM-agent wrapper -> rollout engine -> trajectories -> trainer -> checkpoint -> evaluation -> results
   -> leaderboard), with the library's own floor below and the command lines above, and the trainers on top:

   0. floor: the top-level modules of ``agentgym_bench/`` that every layer may use (errors, paths, seeds, stats,
      progress, http_body, spaces, run_folder, ...);
   1. ``envs/``: the games;
   2. ``agent/``: the wrapper that makes a game an agent env. ``registration.py`` sits here too: it builds every
      agent id from a game (by name, through ``importlib``) and ``LLMAgentEnv`` and registers them; it imports
      ``agent/``, and rollout, benchmark, adapters, commands and trainers import it;
   3. ``rollout/``: env groups, policies, trajectories;
   4. ``multiagent/`` and ``benchmark/``: one floor (self-play rollouts; suites and evaluation). Imports between
      the two are listed as sideways, not as running up. ``agentgym_bench/__init__.py`` is on this floor too:
      ``import agentgym_bench`` registers every env, the single-agent ids (``registration``) and the two-player
      and TextArena ones (``multiagent/``), and imports nothing above;
   5. ``leaderboard/``: verifies and renders results files;
   6. ``adapters/`` and ``serving/``: one floor, the bridges outward (routes for other trainers over the wrapper; a
      local model behind an OpenAI-compatible server). Imports between the two are listed as sideways;
   7. the command layer: ``commands/``, and ``agentgym_bench/cli.py`` (it lists every command);
   8. ``trainers/algos/``: the math, pure masked-tensor functions. ``trainers/__init__.py`` is on this floor too: it
      runs before any trainer module and imports nothing;
   9. ``trainers/runtime/``: what both trainers run on (config loading, launch, distributed, FSDP2, LoRA,
      checkpoints, schedules, metrics);
   10. ``trainers/rl/`` and ``trainers/sft/``: one floor, the two trainers. Imports between the two are listed as
       sideways, not as running up;
   11. ``trainers/cli.py``: the trainers' command line, the top.

   An edge runs up when the importer's layer is below the imported module's. A subpackage (or a top-level module of
   ``trainers/``) not named above is listed as such and left out of this table.
   Import cycles are listed too: groups of modules that import each other, directly or round a loop (imports
   inside functions included, ``import agentgym_bench`` left out). Last, the import statements inside functions:
   all of them, and those of the repository's own modules.
3. Parameters per function: every function and method (nested ones too; lambdas not) in ``agentgym_bench/`` and
   ``trainers/``; ``self``/``cls`` as first parameter not counted, each of positional, keyword-only, ``*args`` and
   ``**kwargs`` counting one.
4. Files crossed by one training iteration: a tiny real training run in a subprocess, the checkout first on
   ``PYTHONPATH``, in a temporary folder (``HOME`` and ``AGENTGYM_BENCH_HOME`` there, offline): ``agentgym-bench
   init-model`` (1 layer, width 32), ``agentgym-bench warmstart`` on 32 oracle episodes of each of the main job's
   four envs (a few seconds, as the trainer tests' tiny model: replies mostly well formed, so the games are played
   and advantages are not all zero), then ``agentgym-bench train baseline-starpo_s`` (StarPO-S with its critic on
   those envs) shrunk to 4 groups of 4, 3 iterations, evaluation at the start and at iteration 3 only, no
   checkpoint before the last. Python function calls are recorded (``sys.setprofile``, and
   ``threading.setprofile`` for threads) from the loop's call of ``trainers.rl.train.run_iteration`` for iteration 2
   to its call for iteration 3 — one whole loop body, set-up, evaluation and checkpoint excluded; where there is
   no ``run_iteration``, between the progress bar's updates after iterations 1 and 2. Counted: the distinct
   ``.py`` files of ``agentgym_bench/`` and ``trainers/`` with code run in that window. About a minute on 2 cores;
   ``--no-trace`` skips it.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agentgym_bench", "trainers")
SUBPACKAGE_LAYERS = {"envs": 1, "agent": 2, "rollout": 3, "multiagent": 4, "benchmark": 4, "leaderboard": 5,
                     "adapters": 6, "serving": 6, "commands": 7}
TOP_MODULE_LAYERS = {"registration.py": 2, "cli.py": 7, "__init__.py": 4}  # other top-level modules: 0
TRAINERS_LAYERS = {"algos": 8, "runtime": 9, "rl": 10, "sft": 10}
TRAINERS_TOP_MODULE_LAYERS = {"__init__.py": 8, "cli.py": 11}  # another top-level module of trainers/: no layer
LAYER_NAMES = {0: "floor", 1: "envs", 2: "agent", 3: "rollout", 4: "multiagent/benchmark", 5: "leaderboard",
               6: "adapters/serving", 7: "commands", 8: "trainers/algos", 9: "trainers/runtime", 10: "trainers/rl+sft",
               11: "trainers/cli"}
SIDEWAYS = {4: frozenset({"multiagent", "benchmark"}), 6: frozenset({"adapters", "serving"}),
            10: frozenset({"rl", "sft"})}
"""The floors shared by two subpackages -> the two: an import between them is sideways."""
MANY_PARAMETERS = 8


def python_files(checkout: Path) -> list[str]:
    """Every ``.py`` file of the two packages, as paths relative to the checkout (``/``-separated), sorted."""
    found = []
    for package in PACKAGES:
        for path in (checkout / package).rglob("*.py"):
            rel = path.relative_to(checkout)
            if not any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                found.append(rel.as_posix())
    return sorted(found)


def folder_of(rel: str) -> str:
    """The row of table 1 a file counts in."""
    parts = rel.split("/")
    return f"{parts[0]}/{parts[1]}/" if len(parts) > 2 else f"{parts[0]}/ (top level)"


def layer_of(rel: str) -> int | None:
    """The layer of a file (module docstring), None for a subpackage of agentgym_bench or trainers, or a top-level
    module of trainers, not in the layering."""
    parts = rel.split("/")
    if parts[0] == "trainers":
        return TRAINERS_TOP_MODULE_LAYERS.get(parts[1]) if len(parts) == 2 else TRAINERS_LAYERS.get(parts[1])
    if len(parts) == 2:
        return TOP_MODULE_LAYERS.get(parts[1], 0)
    return SUBPACKAGE_LAYERS.get(parts[1])


def module_name(rel: str) -> str:
    name = rel.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# 1. Files and lines


def files_and_lines(checkout: Path, files: list[str]) -> str:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for rel in files:
        counts[folder_of(rel)][0] += 1
        counts[folder_of(rel)][1] += line_count(checkout, rel)
    rows = [[folder, n, lines] for folder, (n, lines) in sorted(counts.items())]
    rows.append(["**total**", sum(n for n, _ in counts.values()), sum(lines for _, lines in counts.values())])
    return table(["folder", ".py files", "lines"], rows)


@functools.cache
def _parse(text: str, rel: str) -> ast.Module:
    return ast.parse(text, filename=rel)


def source(checkout: Path, rel: str) -> tuple[str, ast.Module]:
    """A file's text and syntax tree, parsed once for each text (a copy of the tree parses only what differs)."""
    text = (checkout / rel).read_text(encoding="utf-8")
    return text, _parse(text, rel)


def line_count(checkout: Path, rel: str) -> int:
    return len(source(checkout, rel)[0].splitlines())


def functions(tree: ast.AST, prefix: str = ""):
    """Every function and method below ``tree`` (nested ones too; lambdas not) as ``(qualified name, node)``; the
    name is dotted through classes and enclosing functions (``EnvGroups.rollout``, ``main.run``)."""
    blocks = [getattr(tree, field, []) for field in ("body", "orelse", "finalbody")]
    blocks += [block.body for block in [*getattr(tree, "handlers", []), *getattr(tree, "cases", [])]]
    for block in blocks:
        for child in block:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{prefix}{child.name}", child
                yield from functions(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                yield from functions(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.stmt):
                yield from functions(child, prefix)


def function_lengths(checkout: Path, files: list[str]) -> list[tuple[str, int]]:
    """``("file:qualified name", lines)`` for every function and method, from its ``def`` line to its last line
    (decorators not counted, nested functions counted in the enclosing one and on their own)."""
    return [(f"{rel}:{name}", node.end_lineno - node.lineno + 1)
            for rel in files for name, node in functions(source(checkout, rel)[1])]


# 2. Imports


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    kind: str  # "module", "function" or "TYPE_CHECKING"


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def walk(node: ast.AST, kind: str = "module") -> list[tuple[ast.AST, str]]:
    """Every node below ``node``, in source order, with where it sits: ``"module"`` (run on import: module level,
    class bodies, ``try``/``if`` blocks), ``"function"`` (inside a function or lambda) or ``"TYPE_CHECKING"``."""
    found = []
    stack = [(child, kind) for child in reversed(list(ast.iter_child_nodes(node)))]
    while stack:
        child, where = stack.pop()
        found.append((child, where))
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = [(grandchild, "function") for grandchild in ast.iter_child_nodes(child)]
        elif isinstance(child, ast.If) and is_type_checking(child.test) and where == "module":
            inner = [(stmt, "TYPE_CHECKING") for stmt in child.body] + [(stmt, where) for stmt in child.orelse]
        else:
            inner = [(grandchild, where) for grandchild in ast.iter_child_nodes(child)]
        stack.extend(reversed(inner))
    return found


@functools.cache
def statements(tree: ast.Module) -> list[tuple[ast.stmt, str]]:
    """Every statement of a module, in source order, with where it sits (as :func:`walk` says); made once per tree.
    Statements only: expressions hold none but a lambda's body, where no import can be."""
    found: list[tuple[ast.stmt, str]] = []

    def visit(body: list[ast.stmt], kind: str) -> None:
        for stmt in body:
            found.append((stmt, kind))
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(stmt.body, "function")
            elif isinstance(stmt, ast.If) and is_type_checking(stmt.test) and kind == "module":
                visit(stmt.body, "TYPE_CHECKING")
                visit(stmt.orelse, kind)
            else:
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(stmt, field, []), kind)
                for block in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]:
                    visit(block.body, kind)

    visit(tree.body, "module")
    return found


def import_nodes(tree: ast.Module):
    """Every Import/ImportFrom of a module with where it sits: module level, in a function, under TYPE_CHECKING."""
    for stmt, where in statements(tree):
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            yield stmt, where


def imports_of(checkout: Path, rel: str, modules: dict[str, str]) -> list[Import]:
    """The imports of one file that name a module of the repository, resolved to that module."""
    tree = source(checkout, rel)[1]
    me = module_name(rel)
    package = me if rel.endswith("__init__.py") else me.rpartition(".")[0]
    found = []
    for node, kind in import_nodes(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets += [alias.name if alias.name in modules else None for alias in node.names]
        else:
            if node.level:
                up = package.split(".")
                base_parts = up[:len(up) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                targets.append(candidate if candidate in modules else base if base in modules else None)
        found += [Import(me, t, node.lineno, kind) for t in targets if t is not None and t != me]
    return found


def import_edges(checkout: Path, files: list[str]) -> dict[tuple[str, str], list[Import]]:
    """Every (importing module, imported module) pair of the repository with its import statements."""
    modules = {module_name(rel): rel for rel in files}
    edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for rel in files:
        for imp in imports_of(checkout, rel, modules):
            edges[(imp.importer, imp.imported)].append(imp)
    return edges


def module_layers(files: list[str]) -> dict[str, int | None]:
    """Each module's layer (None: a subpackage of agentgym_bench not in the layering)."""
    return {module_name(rel): layer_of(rel) for rel in files}


def subpackage(name: str) -> str:
    """The subpackage of ``agentgym_bench`` or ``trainers`` a module is in (for a top-level module its own name)."""
    return (name.split(".") + [""])[1]


def direction(importer: str, imported: str, layer: dict[str, int | None]) -> str | None:
    """Where an import runs: ``"up"`` (the importer's layer below the imported module's), ``"sideways"``
    (between the two subpackages of one floor of :data:`SIDEWAYS`: multiagent <-> benchmark, adapters <-> serving,
    trainers' rl <-> sft),
    ``"same"`` (within one layer), ``"down"``, or None where either module is not in the layering."""
    la, lb = layer[importer], layer[imported]
    if la is None or lb is None:
        return None
    if la < lb:
        return "up"
    if la == lb and {subpackage(importer), subpackage(imported)} == SIDEWAYS.get(la):
        return "sideways"
    return "same" if la == lb else "down"


def external_imports(checkout: Path, rel: str) -> list[tuple[str, int, str]]:
    """The imports of one file that name no module of the repository, as ``(top-level package, line, where)``:
    import statements (relative ones left out), and calls with a literal module name of
    ``importlib.import_module`` and of ``agentgym_bench.adapters.require`` (how the adapters import their extras)."""
    text, tree = source(checkout, rel)
    calls = "import_module(" in text or "require(" in text
    found = []
    for node, kind in walk(tree) if calls else import_nodes(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(
                node.args[0].value, str):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if called in ("import_module", "require"):
                names = [node.args[0].value]
        found += [(name.split(".")[0], node.lineno, kind) for name in names
                  if name and name.split(".")[0] not in PACKAGES]
    return found


def packages_brought(checkout: Path, files: list[str]) -> dict[str, set[str]]:
    """For each module, the top-level packages outside the repository that importing it imports: its own module-level
    imports and those of every module of the repository it loads in turn (its parent packages' ``__init__`` and
    its module-level imports, round and round; imports inside functions and under TYPE_CHECKING do not run)."""
    modules = {module_name(rel): rel for rel in files}
    own = {name: {package for package, _, kind in external_imports(checkout, rel) if kind == "module"}
           for name, rel in modules.items()}
    loads: dict[str, set[str]] = defaultdict(set)
    for (importer, imported), found in import_edges(checkout, files).items():
        if any(imp.kind == "module" for imp in found):
            loads[importer].add(imported)
    for name in modules:
        parts = name.split(".")
        loads[name].update(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in modules)
    brought = {}
    for name in modules:
        seen, todo = {name}, [name]
        while todo:
            for nxt in loads[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        brought[name] = set().union(*(own[m] for m in seen))
    return brought


def function_imports(checkout: Path, files: list[str]) -> dict[tuple[str, int], list[str]]:
    """The import statements inside functions that name modules of the repository: ``(importing module, line)`` ->
    the modules it names."""
    found: dict[tuple[str, int], list[str]] = defaultdict(list)
    for imports in import_edges(checkout, files).values():
        for imp in imports:
            if imp.kind == "function":
                found[(imp.importer, imp.line)].append(imp.imported)
    return {key: sorted(set(value)) for key, value in sorted(found.items())}


def imports_table(checkout: Path, files: list[str]) -> str:
    modules = {module_name(rel): rel for rel in files}
    edges = import_edges(checkout, files)
    layer = module_layers(files)
    unlayered = sorted({folder_of(rel) for rel in files if layer_of(rel) is None})

    def where(found: list[Import]) -> str:
        return ", ".join(f"{line} ({kind})" for line, kind in sorted({(i.line, i.kind) for i in found}))

    def label(name: str) -> str:
        return f"{layer[name]} {LAYER_NAMES[layer[name]]}"

    def shown(name: str) -> str:
        return f"{name} (its __init__)" if modules[name].endswith("__init__.py") and "." not in name else name

    up, sideways, down, same = [], [], 0, 0
    for (a, b), found in sorted(edges.items()):
        way = direction(a, b, layer)
        if way == "up":
            up.append([shown(a), label(a), shown(b), label(b), where(found)])
        elif way == "sideways":
            sideways.append([a, b, where(found)])
        elif way == "same":
            same += 1
        elif way == "down":
            down += 1
    pairs = Counter(f"{row[1]} -> {row[3]}" for row in up)
    out = [table(["edges between modules of agentgym_bench/ and trainers/", "count"], [
        ["running up (importer's layer below the imported one's)", len(up)],
        ["sideways (multiagent <-> benchmark, trainers' rl <-> sft)", len(sideways)],
        ["down", down], ["within one layer", same],
        ["**all**", len(up) + len(sideways) + down + same]])]
    if unlayered:
        out.append(f"Not in the layering, left out: {', '.join(unlayered)}")
    out += ["", "Running up, by layers:", "", table(["from -> to", "edges"], sorted(pairs.items())), "",
            f"Running up, every edge ({len(up)}; where: line (module level, in a function or TYPE_CHECKING)):", "",
            table(["importer", "its layer", "imported", "its layer", "where"], up), "",
            f"Sideways, multiagent <-> benchmark and trainers' rl <-> sft ({len(sideways)}):", "",
            table(["importer", "imported", "where"], sideways)]
    cycles = import_cycles({pair for pair in edges if pair[1] != "agentgym_bench"})
    out += ["", f"Import cycles, imports inside functions included ({len(cycles)}; ``import agentgym_bench``, which "
            "only registers the envs, left out):", "", *[f"- {' <-> '.join(cycle)}" for cycle in cycles]]
    inside = sum(kind == "function" for rel in files for _, kind in import_nodes(source(checkout, rel)[1]))
    out += ["", table(["import statements inside functions", "count"], [
        ["all", inside], ["naming modules of the repository", len(function_imports(checkout, files))]])]
    return "\n".join(out)


def import_cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The groups of two or more modules that import each other, directly or round a loop: the strongly connected
    components of the import graph (Tarjan's algorithm), each sorted, in sorted order."""
    graph: dict[str, list[str]] = defaultdict(list)
    for importer, imported in sorted(edges):
        if importer != imported:
            graph[importer].append(imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, []):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


# 3. Parameters


def parameter_counts(checkout: Path, files: list[str]) -> list[tuple[str, int]]:
    found = []
    for rel in files:
        for name, node in functions(source(checkout, rel)[1]):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            count = len(positional) + len(args.kwonlyargs) + bool(args.vararg) + bool(args.kwarg)
            if positional and positional[0].arg in ("self", "cls"):
                count -= 1
            found.append((f"{rel}:{name}", count))
    return found


def parameters_table(checkout: Path, files: list[str]) -> str:
    counts = parameter_counts(checkout, files)
    values = [n for _, n in counts]
    many = sum(n >= MANY_PARAMETERS for n in values)
    top = sorted(counts, key=lambda item: (-item[1], item[0]))[:10]
    return "\n".join([
        table(["functions and methods", "median parameters", f"with >= {MANY_PARAMETERS}"],
              [[len(values), f"{statistics.median(values):g}", f"{many} ({100 * many / len(values):.1f}%)"]]),
        "", "The ten with the most parameters:", "",
        table(["function", "parameters"], [[f"`{name}`", n] for name, n in top])])


# 4. One training iteration

TRACE_DRIVER = r'''
import json, os, sys, threading

checkout, work, out = sys.argv[1:4]
seen, state = set(), {"on": False, "how": None}


def hook(frame, event, arg):
    if state["on"] and event == "call":
        seen.add(frame.f_code.co_filename)


def window(step):
    """On from the start of iteration 2 to the start of iteration 3."""
    if step == 2 and not state["on"]:
        state["on"] = True
        sys.setprofile(hook)
    elif step == 3 and state["on"]:
        sys.setprofile(None)
        state["on"] = False


threading.setprofile(hook)  # every thread started from here on; it records only while the window is on
import agentgym_bench
from agentgym_bench import cli

if not os.path.realpath(agentgym_bench.__file__).startswith(checkout + os.sep):
    sys.exit(f"agentgym_bench is imported from {agentgym_bench.__file__}, not from the checkout")
model = os.path.join(work, "model")
code = cli.main(["init-model", "--path", model, "--layers", "1", "--width", "32", "--heads", "2",
                 "--positions", "256"])
if code:
    sys.exit(f"init-model exited with {code}")
envs = ["AgentSokoban-v0", "AgentFrozenLake-v0", "AgentFrozenLakeNoSlip-v0", "AgentBandit-v0"]
settings = {"model": model, "output": model, "envs": envs, "episodes": 32, "epochs": 12, "batch_size": 64,
            "lr": 1e-2, "eval_episodes": 8, "processes": 1}
try:
    code = cli.main(["warmstart", *[f"{k}={json.dumps(v)}" for k, v in settings.items()]])
except SystemExit:  # a checkout from before the warm start's config (issue 61) takes flags only
    code = cli.main(["warmstart", "--model", model, "--output", model, "--envs", *envs,
                     "--episodes", *[f"{env}=32" for env in envs], "--epochs", "12", "--batch-size", "64", "--lr",
                     "1e-2", "--eval-episodes", "8", "--processes", "1"])
if code:
    sys.exit(f"warmstart exited with {code}")

try:
    import trainers.rl.train as train
except ModuleNotFoundError:  # a checkout from before trainers/ had subpackages (issue 61)
    import trainers.train as train

if hasattr(train, "run_iteration"):
    inner = train.run_iteration

    def run_iteration(run, step, *args, **kwargs):
        window(step)
        return inner(run, step, *args, **kwargs)

    train.run_iteration = run_iteration
    state["how"] = f"from the call of {train.__name__}.run_iteration for iteration 2 to its call for iteration 3"
else:
    from agentgym_bench import progress

    class Bar:
        def __init__(self, bar):
            self.bar, self.done = bar, 0

        def update(self, n=1):
            result = self.bar.update(n)
            self.done += n
            window(self.done + 1)
            return result

        def __getattr__(self, name):
            return getattr(self.bar, name)

    names = [name for name, value in vars(train).items() if value is progress.progress]
    if not names:
        sys.exit(f"{train.__name__} has neither run_iteration nor agentgym_bench.progress.progress: no loop found")
    for name in names:
        setattr(train, name, lambda *args, **kwargs: Bar(progress.progress(*args, **kwargs)))
    state["how"] = "between the progress bar's updates after iterations 1 and 2 (no run_iteration)"

overrides = [
    f"pretrain={model}", f"output_dir={os.path.join(work, 'run')}", "max_steps=3", "eval_steps=3", "save_steps=0",
    "progress=false", "num_threads=1", "rollout_batch_size=16", "val_batch_size=4", "ppo_mini_batch_size=16",
    "micro_batch_size=16", "max_new_tokens=8", "train_env_manager.num_env_groups=4",
    "train_env_manager.group_size=4", "train_env_manager.num_groups_partition=[1, 1, 1, 1]",
    "val_env_manager.num_env_groups=4",
]
code = cli.main(["train", "baseline-starpo_s", *overrides])
window(3)
if code:
    sys.exit(f"train exited with {code}")
with open(out, "w") as f:
    json.dump({"how": state["how"], "files": sorted(seen)}, f)
'''


def trace_iteration(checkout: Path, timeout: float = 600) -> tuple[str, list[str]]:
    """How the window was found and the repository files (relative) with code run in iteration 2."""
    with tempfile.TemporaryDirectory(prefix="code-shape-") as work:
        out = Path(work) / "trace.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]),
               "HOME": work, "AGENTGYM_BENCH_HOME": str(Path(work) / "home"), "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
               "OMP_NUM_THREADS": "1"}
        done = subprocess.run([sys.executable, "-c", TRACE_DRIVER, str(checkout), work, str(out)], cwd=work, env=env,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode or not out.exists():
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-12:])
            raise RuntimeError(f"the tiny training run failed (exit {done.returncode}):\n{tail}")
        result = json.loads(out.read_text())
    files = set()
    for name in result["files"]:
        path = Path(os.path.realpath(name))
        if path.suffix == ".py" and path.is_relative_to(checkout):
            rel = path.relative_to(checkout).as_posix()
            if rel.split("/")[0] in PACKAGES:
                files.add(rel)
    return result["how"], sorted(files)


def iteration_table(checkout: Path) -> str:
    try:
        how, files = trace_iteration(checkout)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        return f"Not measured: {error}"
    per_folder = Counter(folder_of(rel) for rel in files)
    rows = [[folder, n] for folder, n in sorted(per_folder.items())] + [["**total**", len(files)]]
    return "\n".join([f"Recorded {how}.", "", table(["folder", "files with code run"], rows), "",
                      "The files:", "", *[f"- {rel}" for rel in files]])


def revision(checkout: Path) -> str:
    try:
        done = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%h %s"], capture_output=True,
                              text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "(not a git checkout)"
    line = done.stdout.strip()
    return line if len(line) <= 100 else line[:97] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", nargs="?", default=str(ROOT), help="a checkout's root (default: %(default)s)")
    parser.add_argument("--no-trace", action="store_true", help="skip part 4 (the tiny training run)")
    args = parser.parse_args(argv)
    checkout = Path(os.path.realpath(args.checkout))
    files = python_files(checkout)
    if not files:
        parser.error(f"no agentgym_bench/ or trainers/ .py files under {checkout}")
    sections = [f"# Code shape of {checkout}", "", f"Revision: {revision(checkout)}", "",
                "## 1. Files and lines per folder", "", files_and_lines(checkout, files), "",
                "## 2. Imports running back up", "",
                "Layers, bottom to top: " + ", ".join(f"{n} {name}" for n, name in LAYER_NAMES.items()) + ".", "",
                imports_table(checkout, files), "",
                "## 3. Parameters per function", "", parameters_table(checkout, files)]
    if not args.no_trace:
        sections += ["", "## 4. Files crossed by one training iteration", "", iteration_table(checkout)]
    print("\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
