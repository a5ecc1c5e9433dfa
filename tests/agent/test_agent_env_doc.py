"""Every Python block of docs/agent-env.md runs as written and prints what its comments say."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "agent-env.md"


def test_every_python_block_runs_and_prints_its_comments(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})
        printed = capsys.readouterr().out.splitlines()
        expected = [line.split("# ", 1)[1].removesuffix(" ...") for line in block.splitlines() if "print(" in line]
        assert len(printed) == len(expected) and all(p.startswith(e) for p, e in zip(printed, expected, strict=True))
