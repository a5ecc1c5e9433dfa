"""README's Layout block is true and complete: every path it names exists, and it names every top-level folder that
git tracks (dot-folders aside), every subpackage and every module at the top of ``agentgym_bench/``, and every
subpackage and module at the top of ``trainers/``, with each module of a ``trainers/`` subpackage in that subpackage's
entry.

The block is a table in plain text: a name at the left (``agentgym_bench/``; indented by two under it, ``envs/``,
``seeds.py``), two or more spaces, then its description, which may go on in lines indented further. Names are split
at ``", "``; the file names a description mentions (``specs.py``, ``configs/*.yaml``, ``benchmarks/README.md``) are
read in the entry's folder, in its top-level folder, from the repository's root, or anywhere below the top-level
folder (``README.md`` of each board)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MENTION = re.compile(r"[\w.*<>-]+(?:/[\w.*<>-]*)*")
FILE_TYPES = {".py", ".md", ".sh", ".json", ".yaml", ".html", ".png", ".toml", ".txt", ".jinja"}


@dataclass
class Entry:
    top: str
    names: list[str]
    nested: bool
    text: list[str] = field(default_factory=list)

    @property
    def folders(self) -> list[Path]:
        """Where the description's file names may be: the entry's own folders, its top-level folder, the root."""
        own = [ROOT / self.top / n for n in self.names if n.endswith("/")] if self.nested else []
        return [*own, ROOT / self.top, ROOT]

    def mentions(self) -> list[str]:
        """The file and folder names in the description."""
        words = MENTION.findall(" ".join(self.text))
        return [w for w in words if "/" in w or Path(w).suffix in FILE_TYPES]


def layout() -> list[Entry]:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("\n## Layout\n", 1)[1].split("```")[1]
    entries: list[Entry] = []
    for line in block.strip("\n").splitlines():
        indent = len(line) - len(line.lstrip())
        if indent > 2:  # the description goes on
            entries[-1].text.append(line.strip())
            continue
        name, _, text = line.strip().partition("  ")
        top = entries[-1].top if indent else name.rstrip("/")
        entries.append(Entry(top, name.split(", "), bool(indent), [text.strip()]))
    return entries


def exists(entry: Entry, mention: str) -> bool:
    if "<" in mention:  # a placeholder such as leaderboards/<board>/
        return True
    return any(any(folder.glob(mention)) for folder in entry.folders) or any((ROOT / entry.top).rglob(mention))


def tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return out.stdout.splitlines()


def test_every_path_the_layout_names_exists():
    missing = []
    for entry in layout():
        for name in entry.names:
            if not (ROOT / (entry.top if not entry.nested else f"{entry.top}/{name}")).exists():
                missing.append(name)
        missing += [f"{m} (in {entry.top}/)" for m in entry.mentions() if not exists(entry, m)]
    assert not missing, f"README's Layout names paths that do not exist: {missing}"


def test_the_layout_names_every_folder_package_and_module():
    entries = layout()
    files = tracked()
    top = {e.top for e in entries if not e.nested}
    folders = {p.split("/")[0] for p in files if "/" in p and not p.startswith(".")}
    assert folders <= top, f"top-level folders missing from README's Layout: {sorted(folders - top)}"

    library = {n.rstrip("/") for e in entries if e.top == "agentgym_bench" and e.nested for n in e.names}
    packages = {p.split("/")[1] for p in files if re.fullmatch(r"agentgym_bench/\w+/__init__\.py", p)}
    modules = {p.split("/")[1] for p in files if re.fullmatch(r"agentgym_bench/\w+\.py", p)} - {"__init__.py"}
    assert packages | modules <= library, ("agentgym_bench/ subpackages and modules missing from README's Layout: "
                                           f"{sorted(packages | modules - library)}")

    trainers = {n.rstrip("/"): e for e in entries if e.top == "trainers" and e.nested for n in e.names}
    packages = {p.split("/")[1] for p in files if re.fullmatch(r"trainers/\w+/__init__\.py", p)}
    modules = {p.split("/")[1] for p in files if re.fullmatch(r"trainers/\w+\.py", p)} - {"__init__.py"}
    assert packages | modules <= set(trainers), ("trainers/ subpackages and modules missing from README's Layout: "
                                                 f"{sorted(packages | modules - set(trainers))}")
    unnamed = []
    for package in sorted(packages):
        entry = trainers[package]
        named = {Path(m).name for m in [*entry.names, *entry.mentions()]}
        unnamed += [p for p in files if re.fullmatch(rf"trainers/{package}/\w+\.py", p)
                    and Path(p).name not in named | {"__init__.py"}]
    assert not unnamed, f"trainers/ modules missing from their subpackage's entry in README's Layout: {unnamed}"
