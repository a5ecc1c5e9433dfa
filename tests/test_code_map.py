"""The code map as rules (issue 61): the layering, cycles, lengths, package docstrings, imports inside functions and
the commands fail here when they drift, instead of only showing in ``scripts/code_shape.py``'s tables.

The layer table and the measurements are ``scripts/code_shape.py``'s (loaded by path: one home); the allowances are
here, each with its reason. An allowance that no longer matches anything fails too, so the lists stay true: remove
it when its cause goes.

1. Imports run down the layers (``code_shape.SUBPACKAGE_LAYERS``, ``TOP_MODULE_LAYERS``, and for ``trainers/``
   ``TRAINERS_LAYERS``, ``TRAINERS_TOP_MODULE_LAYERS``: algos < runtime < rl, sft < cli): an import running up, or
   sideways between multiagent/ and benchmark/ or between trainers/rl/ and trainers/sft/, at module level, inside a
   function or under TYPE_CHECKING, is listed in :data:`ALLOWED_IMPORTS` with its reason. Every subpackage of
   ``agentgym_bench/`` and of ``trainers/``, and every top-level module of ``trainers/``, has a layer.
2. No import cycles, imports inside functions included (``import agentgym_bench``, which only registers the envs,
   left out).
3. No file over :data:`MAX_FILE_LINES` lines and no function or method over :data:`MAX_FUNCTION_LINES` lines (from
   its ``def`` to its last line) outside :data:`LONG_FILES` and :data:`LONG_FUNCTIONS`.
4. Each package's docstring (every ``__init__.py`` of ``agentgym_bench/`` and ``trainers/``) names each of its
   modules and subpackages, and everything it names exists. A module is named as ``name.py``, ``:mod:`.name```,
   or its dotted name (``trainers.rl.train``); a subpackage as ``name/`` or its dotted name. Names that must exist:
   ``x.py`` (in the package; with a ``/``, from the package or the repository's root), ``name/`` (the same),
   ``:mod:`` targets (modules), and dotted names under ``agentgym_bench.`` or ``trainers.`` (a module, then one
   name that module defines).
5. Imports sit at the top of the file, except those of a heavy package, which never do. Ruff enforces most of it
   (pyproject.toml: ``PLC0415``, and ``TID253``, whose list of packages banned at module level is :data:`HEAVY` and
   which exempts them from ``PLC0415``); an exception carries its reason on the line, ``# noqa: PLC0415 - brings
   torch`` or ``# noqa: TID253 - trainers/ runs on torch``. Here, what ruff cannot see: an import inside a function
   of a module of the repository brings a heavy package that the importing module does not bring already (a module
   brings a package when importing it imports that package, through its own module-level imports or those of the
   modules it loads); every ``noqa`` of the two rules in ``agentgym_bench/``, ``trainers/``, ``scripts/`` and
   ``examples/`` gives its reason after `` - ``; and ``import agentgym_bench`` and the command line's table
   (``agentgym_bench/cli.py``) bring no heavy package. (The imports inside functions of light modules of the
   repository were a ratchet until issue 61 brought them from 59 to none.)
6. A command module parses its arguments and calls the library. The command modules are those of
   ``agentgym_bench/commands/`` and ``trainers/cli.py`` (:data:`COMMAND_FILES`); the command table
   (``agentgym_bench/cli.py``'s ``COMMANDS``) names only them, or a module of :data:`COMMANDS_ELSEWHERE` (a command
   whose work is its module's). No module of ``agentgym_bench/``, ``trainers/``, ``scripts/``, ``benchmarks/`` or
   ``examples/`` imports a command module (the command line does, by name) unless :data:`COMMAND_IMPORTS` lists it;
   tests import the commands they test. Besides the command's ``configure_parser`` and ``run``, a command module's
   functions and classes come to at most :data:`MAX_COMMAND_LOGIC` lines (the parsing and printing helpers a
   command needs) unless :data:`COMMAND_LOGIC` says what library logic it still holds and where that should go. And
   importing a module of the table, what ``agentgym-bench COMMAND --help`` does, brings no heavy package unless
   :data:`HEAVY_COMMANDS` says why.

What "heavy" means (:data:`HEAVY`, read from pyproject.toml: the one list ruff and these rules share): a package whose
import takes 100 ms or more on top of ``import agentgym_bench`` (which loads gymnasium and numpy already, 0.24 s).
Measured on the shared 2-core development machine while training runs used it (one run each, so take them as
+-30%), Python 3.11, the time of ``importlib.import_module(X)`` after ``import agentgym_bench``:

- heavy: ``openenv.core.env_server.http_server`` (what adapters/openenv.py loads) 8.4 s; peft 6.0 s; torch 1.7 s;
  transformers 1.2 s (``transformers.AutoModelForCausalLM`` 4.1 s); gem 1.1 s; datasets 1.0 s; textarena 0.43 s;
  matplotlib 0.12 s (``matplotlib.pyplot`` 0.36 s); fastapi 0.32 s; trl 0.25 s (lazy: its trainers bring torch and
  transformers); huggingface_hub 1 ms but lazy: ``from huggingface_hub import snapshot_download`` (paths.py) 0.20 s;
  vllm (not installed here; it imports torch);
- not heavy: uvicorn 45 ms, jsonschema 44 ms, starlette 33 ms, yaml 29 ms, tqdm 17 ms, pettingzoo 12 ms,
  tokenizers 9 ms, h11 8 ms, anyio 2 ms.

The last tests plant violations (synthetic edges, and a copy of the tree with bad imports, a long file, a missing
module, a command with library logic) and show that each rule fails on them. Parsing only, no project module
imported: a second or two.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_code_shape() -> ModuleType:
    """``scripts/code_shape.py`` (not a package), loaded by path once."""
    if "code_shape" not in sys.modules:
        spec = importlib.util.spec_from_file_location("code_shape", ROOT / "scripts" / "code_shape.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["code_shape"] = module  # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
    return sys.modules["code_shape"]


shape = load_code_shape()

ALLOWED_IMPORTS: dict[tuple[str, str], str] = {
    ("agentgym_bench.benchmark.matches", "agentgym_bench.multiagent.selfplay"):
        "sideways: a two-player suite's matches are played by self-play (play_matches, the scripted opponents)",
    ("agentgym_bench.benchmark.overlap", "agentgym_bench.multiagent.bargain"):
        "sideways: Bargain's deals are the content whose overlap between splits is measured (BargainEnv draws them)",
    ("agentgym_bench.benchmark.overlap", "agentgym_bench.multiagent.bargain_rules"):
        "sideways: the text of a Bargain deal (deal_text), the content compared between splits",
    ("agentgym_bench.benchmark.suites", "agentgym_bench.multiagent.selfplay"):
        "sideways: a suite's match entry is checked against the two-player env ids (MULTIAGENT_ENVS)",
}
"""(importer, imported) -> why the import runs up or sideways."""

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80

LONG_FILES: dict[str, str] = {
    "trainers/rl/config.py":
        "TrainConfig is one dataclass whose field docstrings are the documentation (over 500 lines of them)",
}
"""File -> why it may be over :data:`MAX_FILE_LINES` lines."""

LONG_FUNCTIONS: dict[str, str] = {
    "agentgym_bench/rollout/engine.py:EnvGroups.rollout":
        "the lockstep turn loop (starts, the length cap, one batched policy call, steps, turn records) and its "
        "16-line docstring; split out the turn when it grows",
}
"""``file:qualified name`` -> why it may be over :data:`MAX_FUNCTION_LINES` lines."""

COMMAND_FILES = ("agentgym_bench/commands/", "trainers/cli.py")
"""The command modules: every module of ``agentgym_bench/commands/``, and ``trainers/cli.py``."""

COMMANDS_ELSEWHERE: dict[str, str] = {
    "agentgym_bench.envs.webshop.server":
        "webshop-serve, the bundled store's own server: its configure_parser and run are 42 of the module's lines",
    "trainers.rl.compare":
        "compare-runs, whose work (pairing two runs' validation episodes) is the module's: its parser and run are 35 "
        "of its lines",
    "trainers.sft.default_model":
        "init-model, the module's builder of the default model: its configure_parser and run are 32 lines",
}
"""Modules outside the command modules that ``agentgym_bench/cli.py``'s command table names -> why."""

COMMAND_IMPORTS: dict[tuple[str, str], str] = {
}
"""(importer, command module) -> why a module other than the command line imports a command module."""

MAX_COMMAND_LOGIC = 50

COMMAND_LOGIC: dict[str, str] = {
    "trainers/cli.py":
        "two commands' run bodies (_train, _warm_start), main for torchrun, and the warm start's old flags kept for "
        "one release (legacy_overrides, parse_episodes, parse_demonstrators, new_form: 54 lines, gone with them)",
}
"""Command module -> why its functions and classes besides the command's ``configure_parser`` and ``run`` are over
:data:`MAX_COMMAND_LOGIC` lines (what is library logic, and where it should go)."""

HEAVY_COMMANDS: dict[str, str] = {}
"""Module the command table names -> why importing it (what ``agentgym-bench COMMAND --help`` does) brings a
:data:`HEAVY` package."""



def heavy_packages(pyproject: str) -> frozenset[str]:
    """``banned-module-level-imports`` of the ``[tool.ruff.lint.flake8-tidy-imports]`` table of a pyproject.toml's
    text, read with regular expressions (``tomllib`` is Python 3.11's; the package supports 3.10)."""
    table = re.search(r"^\[tool\.ruff\.lint\.flake8-tidy-imports\]$(.*?)(?=^\[|\Z)", pyproject, re.M | re.S)
    value = table and re.search(r"^banned-module-level-imports\s*=\s*\[(.*?)\]", table[1], re.M | re.S)
    assert value, "pyproject.toml has no banned-module-level-imports in [tool.ruff.lint.flake8-tidy-imports]"
    return frozenset(re.findall(r'"([\w.]+)"', value[1]))


HEAVY = heavy_packages((ROOT / "pyproject.toml").read_text())
"""Top-level packages slow to import (the module docstring has the measurements): ruff's list, never at module level
(``TID253``) and so allowed inside functions (``PLC0415``)."""

NOQA = re.compile(r"#\s*noqa:\s*(?P<codes>[A-Z]+\d+(?:\s*,\s*[A-Z]+\d+)*)(?P<rest>.*)$")
"""A ``# noqa: CODE[, CODE]`` comment and what follows it (`` - reason``)."""


class CodeMap:
    """What the rules read from one checkout: its ``.py`` files, modules, import edges and layers."""

    def __init__(self, checkout: Path) -> None:
        self.checkout = checkout
        self.files = shape.python_files(checkout)
        self.modules = {shape.module_name(rel): rel for rel in self.files}
        self.edges = shape.import_edges(checkout, self.files)
        self.layer = shape.module_layers(self.files)


@pytest.fixture(scope="module")
def code_map() -> CodeMap:
    return CodeMap(ROOT)


# The rules: each returns its problems, one line each (none: the rule holds).


def layer_problems(edges, layer: dict[str, int | None], allowed=ALLOWED_IMPORTS) -> list[str]:
    """Imports running up or sideways that are not allowed, and allowances that match no import."""
    found = {(a, b): way for a, b in edges if (way := shape.direction(a, b, layer)) in ("up", "sideways")}
    problems = [f"{a} -> {b} runs {way} ({layer[a]} {shape.LAYER_NAMES[layer[a]]} -> {layer[b]} "
                f"{shape.LAYER_NAMES[layer[b]]}): import it the other way round, or list it in ALLOWED_IMPORTS with "
                "its reason" for (a, b), way in sorted(found.items()) if (a, b) not in allowed]
    problems += [f"ALLOWED_IMPORTS lists {a} -> {b}, which no longer runs up or sideways: remove it"
                 for a, b in sorted(allowed) if (a, b) not in found]
    return problems


def unlayered_problems(files: list[str]) -> list[str]:
    """Subpackages (and top-level modules of trainers/) without a layer, each with the table to add it to."""
    found = {}
    for rel in files:
        if shape.layer_of(rel) is None:
            top_level = rel.count("/") == 1  # only trainers/ has top-level modules without a default layer
            table = "SUBPACKAGE_LAYERS" if not rel.startswith("trainers/") else (
                "TRAINERS_TOP_MODULE_LAYERS" if top_level else "TRAINERS_LAYERS")
            found[rel if top_level else shape.folder_of(rel)] = table
    return [f"{where} has no layer: add it to code_shape.{table}" for where, table in sorted(found.items())]


def cycle_problems(edges) -> list[str]:
    cycles = shape.import_cycles({pair for pair in edges if pair[1] != "agentgym_bench"})
    return [f"import cycle: {' <-> '.join(cycle)}" for cycle in cycles]


def length_problems(lengths: dict[str, int], limit: int, allowed: dict[str, str], what: str, table: str) -> list[str]:
    """Items over ``limit`` lines without an allowance, and allowances for items no longer over it."""
    problems = [f"{name} has {n} lines, over {limit}: split it, or list it in {table} with its reason"
                for name, n in sorted(lengths.items()) if n > limit and name not in allowed]
    for name in sorted(allowed):
        if lengths.get(name, 0) <= limit:
            now = f"has {lengths[name]} lines now" if name in lengths else f"is no {what} any more"
            problems.append(f"{table} lists {name}, which {now}: remove it")
    return problems


def size_problems(cm: CodeMap, long_files=LONG_FILES, long_functions=LONG_FUNCTIONS) -> list[str]:
    files = {rel: shape.line_count(cm.checkout, rel) for rel in cm.files}
    functions = dict(shape.function_lengths(cm.checkout, cm.files))
    return (length_problems(files, MAX_FILE_LINES, long_files, "file", "LONG_FILES")
            + length_problems(functions, MAX_FUNCTION_LINES, long_functions, "function", "LONG_FUNCTIONS"))


REFERENCE = re.compile(r"(?<![\w/.-])(?:"
                       r":mod:`~?(?P<mod>\.*[\w.]+)`"
                       r"|(?P<dotted>(?:agentgym_bench|trainers)(?:\.\w+)+)"
                       r"|(?P<file>(?:\w+/)*\w+\.py)\b"
                       r"|(?P<folder>\w+)/(?![\w.-]))")


def defined_names(tree: ast.Module) -> set[str]:
    """The names a module defines when imported (functions, classes, assignments, imports; in blocks too)."""
    names = set()
    for node, kind in shape.statements(tree):
        if kind != "module":
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def resolve_dotted(cm: CodeMap, name: str) -> str | None:
    """The module a dotted reference is in (``trainers.rl.train.main`` -> ``trainers.rl.train``), None if it names
    nothing: its longest prefix that is a module, then at most one more name, which that module defines."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        module = ".".join(parts[:n])
        if module in cm.modules:
            if n == len(parts):
                return module
            tree = shape.source(cm.checkout, cm.modules[module])[1]
            return module if parts[n] in defined_names(tree) else None
    return None


def docstring_problems(cm: CodeMap) -> list[str]:
    """Packages whose docstring misses one of their modules or subpackages, or names what does not exist."""
    problems = []
    for init in [rel for rel in cm.files if rel.endswith("/__init__.py")]:
        folder = cm.checkout / init.removesuffix("/__init__.py")
        package = shape.module_name(init)
        own = {p.stem: f"{p.name}" for p in folder.glob("*.py") if p.name != "__init__.py"}
        own |= {p.name: f"{p.name}/" for p in folder.iterdir() if (p / "__init__.py").is_file()}
        doc = ast.get_docstring(shape.source(cm.checkout, init)[1]) or ""
        named, missing = set(), []
        for match in REFERENCE.finditer(doc):
            if match["mod"]:  # :mod:`.name` (in this package) or :mod:`agentgym_bench.x.name`: a module
                ref = match["mod"]
                dots = len(ref) - len(ref.lstrip("."))
                base = ".".join(package.split(".")[:len(package.split(".")) - max(dots - 1, 0)])
                target = f"{base}.{ref[dots:]}" if dots else ref
                if target not in cm.modules:
                    missing.append(f":mod:`{ref}`")
                named.add(target)
            elif match["dotted"]:  # agentgym_bench.x.y or trainers.x: a module, then a name it defines
                module = resolve_dotted(cm, match["dotted"])
                if module is None:
                    missing.append(match["dotted"])
                named.add(module)
            elif match["file"] and "/" not in match["file"]:  # name.py: a module of this package
                if not (folder / match["file"]).is_file():
                    missing.append(match["file"])
                named.add(f"{package}.{match['file'].removesuffix('.py')}")
            else:  # a/b.py or name/: from this package's folder or the repository's root
                ref = match["file"] or f"{match['folder']}/"
                if not ((folder / ref).exists() or (cm.checkout / ref).exists()):
                    missing.append(ref)
                if match["folder"] and (folder / ref / "__init__.py").is_file():
                    named.add(f"{package}.{match['folder']}")
        unnamed = [shown for stem, shown in sorted(own.items()) if f"{package}.{stem}" not in named]
        if unnamed:
            problems.append(f"{init}: its docstring does not name {', '.join(unnamed)} (one short line each: what it "
                            "holds)")
        if missing:
            problems.append(f"{init}: its docstring names what does not exist: {', '.join(sorted(set(missing)))}")
    return problems


def light_function_imports(cm: CodeMap, heavy=HEAVY) -> dict[tuple[str, int], list[str]]:
    """Import statements inside functions that name modules of the repository, none of which brings a heavy
    package the importing module does not bring already: ``(importing module, line)`` -> the modules."""
    brought = shape.packages_brought(cm.checkout, cm.files)
    found = shape.function_imports(cm.checkout, cm.files)
    return {(module, line): targets for (module, line), targets in found.items()
            if not any((brought[t] - brought[module]) & heavy for t in targets)}


def function_import_problems(found: dict[tuple[str, int], list[str]]) -> list[str]:
    return [f"{module}:{line} imports {', '.join(targets)} inside a function, which brings no heavy package that "
            f"{module} does not bring already: import it at the top of the file" for (module, line), targets in
            sorted(found.items())]


def noqa_problems(checkout: Path, files: list[str], codes=("PLC0415", "TID253")) -> list[str]:
    """``# noqa`` comments of ``codes`` without a reason (`` - why`` after the codes)."""
    problems = []
    for rel in files:
        for n, line in enumerate(shape.source(checkout, rel)[0].splitlines(), 1):
            match = NOQA.search(line)
            if match and set(re.split(r"\s*,\s*", match["codes"])) & set(codes) and not re.match(r"\s+-\s+\S",
                                                                                                 match["rest"]):
                problems.append(f"{rel}:{n}: give the reason for `# noqa: {match['codes']}` after ` - `")
    return problems


def startup_problems(cm: CodeMap, heavy=HEAVY, light=("agentgym_bench", "agentgym_bench.cli")) -> list[str]:
    """Modules of ``light`` (what ``import agentgym_bench`` and ``agentgym-bench --help`` load) that bring a heavy
    package."""
    brought = shape.packages_brought(cm.checkout, cm.files)
    return [f"importing {name} imports {', '.join(sorted(brought[name] & heavy))}: import it inside the function that "
            "needs it" for name in light if brought[name] & heavy]


def is_command_module(rel: str) -> bool:
    return rel.startswith(COMMAND_FILES) and not rel.endswith("/__init__.py")


def command_table(cm: CodeMap) -> dict[str, str]:
    """``agentgym_bench/cli.py``'s ``COMMANDS``, read from its syntax tree: command name -> the module it names."""
    tree = shape.source(cm.checkout, "agentgym_bench/cli.py")[1]
    table = next(node.value for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 and "COMMANDS" in [t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                                    if isinstance(t, ast.Name)])
    return {key.value: value.elts[0].value.partition(":")[0]
            for key, value in zip(table.keys, table.values, strict=True)}


def command_home_problems(cm: CodeMap, elsewhere=COMMANDS_ELSEWHERE) -> list[str]:
    """Commands of the table in a module that is no command module and not listed, and stale listings."""
    command_modules = {shape.module_name(rel) for rel in cm.files if is_command_module(rel)}
    named = set(command_table(cm).values())
    problems = [f"the command table names {module}, which is no command module: parse the arguments in a module of "
                f"{' or '.join(COMMAND_FILES)} and call the library from there, or list it in COMMANDS_ELSEWHERE "
                "with its reason" for module in sorted(named - command_modules - set(elsewhere))]
    return problems + [f"COMMANDS_ELSEWHERE lists {module}, which the command table does not name: remove it"
                       for module in sorted(set(elsewhere) - named)]


def extra_imports(checkout: Path, modules: dict[str, str], folders=("scripts", "benchmarks", "examples")):
    """The imports of modules of the repository by the ``.py`` files of ``folders`` (tests import what they test)."""
    rels = sorted(p.relative_to(checkout).as_posix() for folder in folders for p in (checkout / folder).glob("*.py"))
    return [imp for rel in rels for imp in shape.imports_of(checkout, rel, modules)]


def command_import_problems(cm: CodeMap, allowed=COMMAND_IMPORTS) -> list[str]:
    """Imports of a command module by a module other than the command line, not allowed; stale allowances."""
    command_modules = {shape.module_name(rel) for rel in cm.files if is_command_module(rel)}
    imports = [imp for found in cm.edges.values() for imp in found] + extra_imports(cm.checkout, cm.modules)
    found = {(imp.importer, imp.imported) for imp in imports if imp.imported in command_modules}
    problems = [f"{a} imports the command module {b}: a command module parses its arguments and calls the library, "
                "so move what is imported into the library, or list the import in COMMAND_IMPORTS with its reason"
                for a, b in sorted(found - set(allowed))]
    return problems + [f"COMMAND_IMPORTS lists {a} -> {b}, which is no import any more: remove it"
                       for a, b in sorted(set(allowed) - found)]


def command_logic(checkout: Path, rel: str) -> int:
    """Lines of a command module's top-level functions and classes (decorators included) other than the command's
    ``configure_parser`` and ``run`` (in a module of several commands: the functions each ``Command(...)`` names)."""
    tree = shape.source(checkout, rel)[1]
    commands = {"configure_parser", "run"} | {arg.id for node in ast.walk(tree) if isinstance(node, ast.Call)
                                              and getattr(node.func, "id", None) == "Command"
                                              for arg in node.args if isinstance(arg, ast.Name)}
    return sum(node.end_lineno - min([node.lineno, *(d.lineno for d in node.decorator_list)]) + 1
               for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               and node.name not in commands)


def command_logic_problems(cm: CodeMap, allowed=COMMAND_LOGIC) -> list[str]:
    lines = {rel: command_logic(cm.checkout, rel) for rel in cm.files if is_command_module(rel)}
    problems = [f"{rel} holds {n} lines of functions and classes besides its command's configure_parser and run, "
                f"over {MAX_COMMAND_LOGIC}: move the library logic to the library, or list it in COMMAND_LOGIC with "
                "its reason" for rel, n in sorted(lines.items()) if n > MAX_COMMAND_LOGIC and rel not in allowed]
    for rel in sorted(allowed):
        if lines.get(rel, 0) <= MAX_COMMAND_LOGIC:
            now = f"holds {lines[rel]} lines now" if rel in lines else "is no command module any more"
            problems.append(f"COMMAND_LOGIC lists {rel}, which {now}: remove it")
    return problems


def heavy_command_problems(cm: CodeMap, heavy=HEAVY, allowed=HEAVY_COMMANDS) -> list[str]:
    """Modules of the command table that bring a heavy package (their ``--help`` loads it), not allowed; stale
    allowances."""
    brought = shape.packages_brought(cm.checkout, cm.files)
    named = set(command_table(cm).values())
    found = {module for module in named if brought[module] & heavy}
    problems = [f"importing {module} (its command's --help) imports {', '.join(sorted(brought[module] & heavy))}: "
                "import it inside the function that needs it, or list the module in HEAVY_COMMANDS with its reason"
                for module in sorted(found - set(allowed))]
    return problems + [f"HEAVY_COMMANDS lists {module}, which brings no heavy package now: remove it"
                       for module in sorted(set(allowed) - found)]


def script_files(checkout: Path) -> list[str]:
    return sorted(p.relative_to(checkout).as_posix() for folder in ("scripts", "examples")
                  for p in (checkout / folder).glob("*.py"))


RULES: dict[str, tuple[str, Callable[[CodeMap], list[str]]]] = {
    "imports run down the layers or are allowed":
        ("layers", lambda cm: layer_problems(cm.edges, cm.layer) + unlayered_problems(cm.files)),
    "no import cycles": ("cycles", lambda cm: cycle_problems(cm.edges)),
    "files and functions are short or allowed": ("sizes", size_problems),
    "package docstrings name their modules": ("docstrings", docstring_problems),
    "imports inside functions bring a heavy package":
        ("imports", lambda cm: function_import_problems(light_function_imports(cm))),
    "import agentgym_bench and the command table bring no heavy package": ("imports", startup_problems),
    "every noqa of the import rules gives its reason":
        ("imports", lambda cm: noqa_problems(cm.checkout, cm.files + script_files(cm.checkout))),
    "the command table names command modules or listed ones": ("commands", command_home_problems),
    "only the command line imports a command module": ("commands", command_import_problems),
    "command modules hold little besides parsing and calls": ("commands", command_logic_problems),
    "a command's --help loads no heavy package": ("commands", heavy_command_problems),
}
"""Each rule of the module docstring: its name -> (its group, the function that lists its problems)."""


def all_problems(cm: CodeMap) -> dict[str, list[str]]:
    """The problems of every rule, by group."""
    problems: dict[str, list[str]] = {}
    for group, rule in RULES.values():
        problems.setdefault(group, []).extend(rule(cm))
    return problems


# The rules on this checkout.


@pytest.mark.parametrize("rule", list(RULES))
def test_the_rule_holds(code_map, rule):
    problems = RULES[rule][1](code_map)
    assert not problems, "\n".join(problems)


def test_the_heavy_list_is_ruffs():
    assert {"torch", "transformers", "openenv"} <= HEAVY
    planted = ('[tool.ruff.lint.flake8-tidy-imports]\nbanned-module-level-imports = ["torch",\n  "vllm"]\n\n'
               '[x]\nbanned-module-level-imports = ["numpy"]\n')
    assert heavy_packages(planted) == {"torch", "vllm"}


def test_every_allowance_gives_a_one_line_reason():
    reasons = [*ALLOWED_IMPORTS.values(), *LONG_FILES.values(), *LONG_FUNCTIONS.values(), *COMMANDS_ELSEWHERE.values(),
               *COMMAND_IMPORTS.values(), *COMMAND_LOGIC.values(), *HEAVY_COMMANDS.values()]
    assert all(reason.strip() and "\n" not in reason for reason in reasons)


# The rules bite: planted violations.


def test_an_import_running_up_or_sideways_fails_and_so_does_a_stale_allowance(code_map):
    layer = {"agentgym_bench.envs.bandit": 1, "agentgym_bench.rollout.engine": 3, "agentgym_bench.stats": 0,
             "agentgym_bench.multiagent.selfplay": 4, "agentgym_bench.benchmark.suites": 4}
    allowed = {("agentgym_bench.benchmark.suites", "agentgym_bench.multiagent.selfplay"): "a reason",
               ("agentgym_bench.stats", "agentgym_bench.envs.bandit"): "gone"}
    edges = [("agentgym_bench.envs.bandit", "agentgym_bench.rollout.engine"),
             ("agentgym_bench.rollout.engine", "agentgym_bench.envs.bandit"),
             ("agentgym_bench.multiagent.selfplay", "agentgym_bench.benchmark.suites"),
             ("agentgym_bench.benchmark.suites", "agentgym_bench.multiagent.selfplay")]
    problems = layer_problems(edges, layer, allowed)
    assert len(problems) == 3, problems
    assert problems[0].startswith("agentgym_bench.envs.bandit -> agentgym_bench.rollout.engine runs up")
    assert problems[1].startswith("agentgym_bench.multiagent.selfplay -> agentgym_bench.benchmark.suites runs "
                                  "sideways")
    assert "agentgym_bench.stats -> agentgym_bench.envs.bandit, which no longer runs up or sideways" in problems[2]


def test_an_import_cycle_fails_even_through_a_function():
    edges = {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "agentgym_bench"), ("agentgym_bench", "d")}
    assert cycle_problems(edges) == ["import cycle: a <-> b <-> c"]


def test_a_long_item_fails_and_so_does_a_stale_allowance():
    lengths = {"x.py": 601, "y.py": 600, "z.py": 900}
    problems = length_problems(lengths, 600, {"y.py": "was long", "z.py": "is long", "gone.py": "moved"}, "file",
                               "LONG_FILES")
    assert problems == ["x.py has 601 lines, over 600: split it, or list it in LONG_FILES with its reason",
                        "LONG_FILES lists gone.py, which is no file any more: remove it",
                        "LONG_FILES lists y.py, which has 600 lines now: remove it"]


def test_a_noqa_of_the_import_rules_without_its_reason_fails(tmp_path):
    (tmp_path / "planted.py").write_text("import a  # noqa: PLC0415 - brings torch\nimport b  # noqa: TID253\n"
                                         "import c  # noqa: E402,PLC0415 (no dash)\nimport d  # noqa: F401\n")
    assert noqa_problems(tmp_path, ["planted.py"]) == [
        "planted.py:2: give the reason for `# noqa: TID253` after ` - `",
        "planted.py:3: give the reason for `# noqa: E402,PLC0415` after ` - `"]


def test_every_rule_fails_on_a_planted_copy_of_the_tree(tmp_path, code_map):
    for folder in (*shape.PACKAGES, "scripts"):  # scripts/: what rule 6 reads besides the packages
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))

    def plant(rel: str, old: str, new: str) -> None:
        path = tmp_path / rel
        text = path.read_text()
        assert old in text, f"{rel} has changed: plant elsewhere"
        path.write_text(text.replace(old, new, 1))

    # envs -> leaderboard runs up; the two planted imports (inside functions, of modules bringing no heavy package)
    # close a cycle and belong at the top.
    plant("agentgym_bench/envs/bandit.py", '"""\n', '"""\n\n\ndef _planted():\n    from agentgym_bench.leaderboard '
          'import board\n    return board\n')
    plant("agentgym_bench/leaderboard/board.py", '"""\n', '"""\n\n\ndef _planted():\n    from agentgym_bench.envs '
          'import bandit\n    return bandit\n')
    # Within trainers/: the math imports the runtime (up), the warm start the RL trainer (sideways), both at module
    # level (rule 5 reads imports inside functions only); a new top-level module has no layer.
    plant("trainers/algos/masked.py", '"""\n', '"""\n\nfrom trainers.runtime import schedule  # planted\n')
    plant("trainers/sft/sft_config.py", '"""\n', '"""\n\nfrom trainers.rl import compare  # planted\n')
    (tmp_path / "trainers/planted.py").write_text('"""Planted."""\n')
    # The update imports the HF backend inside a function, which brings nothing it does not bring (torch); the
    # command table imports torch.
    plant("trainers/rl/ppo.py", '"""\n', '"""\n\n\ndef _planted():\n    from agentgym_bench.rollout import hf\n'
          '    return hf\n')
    plant("agentgym_bench/cli.py", '"""\n', '"""\n\nimport torch  # noqa: TID253 - planted\n')
    # Commands: the table names a library module; the board imports a command module; the envs command grows a
    # helper of 51 lines; the board command imports torch.
    plant("agentgym_bench/cli.py", "COMMANDS: dict[str, tuple[str, str]] = {\n",
          'COMMANDS: dict[str, tuple[str, str]] = {\n    "planted": ("agentgym_bench.stats", "planted"),\n')
    plant("agentgym_bench/leaderboard/board.py", '"""\n', '"""\n\nfrom agentgym_bench.commands import envs  # planted'
          '\n')
    plant("agentgym_bench/commands/envs.py", '"""\n', '"""\n\n\ndef helper():\n' + "    x = 1\n" * 50)
    plant("agentgym_bench/commands/board.py", '"""\n', '"""\n\nimport torch  # noqa: TID253 - planted\n')
    # A long file with a long function, in no docstring.
    body = "".join(f"    x = {i}\n" for i in range(80))
    (tmp_path / "agentgym_bench/envs/planted.py").write_text(
        '"""Planted."""\n\n\ndef long():\n' + body + "\n" * (MAX_FILE_LINES - 84) + "x = 1\n")
    # A docstring that names a moved module, a file, a folder and dotted names that do not exist.
    (tmp_path / "agentgym_bench/benchmark/__init__.py").write_text(
        '"""- :mod:`.gone`: moved; ``suites.py``, ``nowhere.py``, ``gone/``; ``trainers.nowhere``, '
        '``trainers.rl.train.nothing``."""\n')

    planted = CodeMap(tmp_path)
    problems = all_problems(planted)

    layers = "\n".join(problems["layers"])
    assert "agentgym_bench.envs.bandit -> agentgym_bench.leaderboard.board runs up (1 envs -> 5 leaderboard)" in layers
    assert "trainers.algos.masked -> trainers.runtime.schedule runs up (8 trainers/algos -> 9 trainers/runtime)" \
        in layers
    assert "trainers.sft.sft_config -> trainers.rl.compare runs sideways (10 trainers/rl+sft -> 10 trainers/rl+sft)" \
        in layers
    assert "trainers/planted.py has no layer: add it to code_shape.TRAINERS_TOP_MODULE_LAYERS" in layers
    assert any("agentgym_bench.envs.bandit" in p and "agentgym_bench.leaderboard.board" in p
               for p in problems["cycles"])
    assert "agentgym_bench/envs/planted.py has 601 lines, over 600: split it, or list it in LONG_FILES with its " \
           "reason" in problems["sizes"]
    assert "agentgym_bench/envs/planted.py:long has 81 lines, over 80: split it, or list it in LONG_FUNCTIONS with " \
           "its reason" in problems["sizes"]
    docs = "\n".join(problems["docstrings"])
    assert "agentgym_bench/envs/__init__.py: its docstring does not name planted.py" in docs
    assert "agentgym_bench/benchmark/__init__.py: its docstring does not name data/, episodes.py, evaluate.py, " \
           "kinds.py, matches.py" in docs
    assert "agentgym_bench/benchmark/__init__.py: its docstring names what does not exist: :mod:`.gone`, gone/, " \
           "nowhere.py, trainers.nowhere, trainers.rl.train.nothing" in docs
    imports = [re.sub(r":\d+ ", " ", p.split(" inside a function")[0]) for p in problems["imports"]]
    assert imports == ["agentgym_bench.envs.bandit imports agentgym_bench.leaderboard.board",
                       "agentgym_bench.leaderboard.board imports agentgym_bench.envs.bandit",
                       "trainers.rl.ppo imports agentgym_bench.rollout.hf",
                       "importing agentgym_bench.cli imports torch: import it inside the function that needs it"]
    assert problems["commands"] == [
        "the command table names agentgym_bench.stats, which is no command module: parse the arguments in a module of "
        "agentgym_bench/commands/ or trainers/cli.py and call the library from there, or list it in "
        "COMMANDS_ELSEWHERE with its reason",
        "agentgym_bench.leaderboard.board imports the command module agentgym_bench.commands.envs: a command module "
        "parses its arguments and calls the library, so move what is imported into the library, or list the import "
        "in COMMAND_IMPORTS with its reason",
        "agentgym_bench/commands/envs.py holds 51 lines of functions and classes besides its command's "
        "configure_parser and run, over 50: move the library logic to the library, or list it in COMMAND_LOGIC with "
        "its reason",
        "importing agentgym_bench.commands.board (its command's --help) imports torch: import it inside the function "
        "that needs it, or list the module in HEAVY_COMMANDS with its reason"]
    # A stale size allowance, on this checkout.
    assert size_problems(code_map, long_files={**LONG_FILES, "agentgym_bench/stats.py": "planted"}) == [
        f"LONG_FILES lists agentgym_bench/stats.py, which has {shape.line_count(ROOT, 'agentgym_bench/stats.py')} "
        "lines now: remove it"]
