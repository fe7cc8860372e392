"""The README shows what the tool prints: its demo block is an excerpt of the real output of `make demo`'s commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _is_excerpt(shown: list[str], printed: list[str]) -> bool:
    """Whether ``shown`` is ``printed`` with runs of lines left out, each run marked by one ``...`` line: it starts
    with the first printed line and ends with the last, and every other line is printed, in order."""
    chunks: list[list[str]] = [[]]
    for line in shown:
        if line == "...":
            chunks.append([])
        else:
            chunks[-1].append(line)
    if any(not chunk for chunk in chunks) or printed[: len(chunks[0])] != chunks[0]:
        return False
    at = len(chunks[0])
    for chunk in chunks[1:]:
        # The earliest place after at least one line left out (the earliest keeps the most room for the rest).
        starts = [i for i in range(at + 1, len(printed) - len(chunk) + 1) if printed[i : i + len(chunk)] == chunk]
        if not starts:
            return False
        at = starts[0] + len(chunk)
    return at == len(printed)


def test_an_excerpt_is_the_output_with_marked_lines_left_out():
    printed = ["a", "b", "c", "d", "e"]
    assert _is_excerpt(["a", "b", "c", "d", "e"], printed)
    assert _is_excerpt(["a", "...", "c", "...", "e"], printed)
    assert _is_excerpt(["a", "b", "...", "e"], printed)
    assert not _is_excerpt(["a", "...", "b", "c", "d", "e"], printed)  # "..." where nothing is left out
    assert not _is_excerpt(["a", "...", "d", "c", "...", "e"], printed)  # out of order
    assert not _is_excerpt(["a", "...", "x", "...", "e"], printed)  # a line never printed
    assert not _is_excerpt(["b", "...", "e"], printed)  # not from the start
    assert not _is_excerpt(["a", "...", "d"], printed)  # not to the end
    assert not _is_excerpt(["a", "...", "...", "e"], printed)


def test_the_readme_demo_is_what_make_demo_prints():
    # The README shows an excerpt: the demo's first and last lines, and runs of lines between, each gap marked "...".
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"then the regression check.*?\n```\n(.*?)```\n", readme, flags=re.S)
    assert shown is not None
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    demo = re.search(r"^demo: \S+\n((?:\t.*\n)+)", makefile, flags=re.M)
    assert demo is not None
    printed = ""
    for line in demo.group(1).splitlines():
        command = line.strip().replace("$(BIN)/speechclock", "").split()
        done = subprocess.run(
            [sys.executable, "-m", "clock", *command], cwd=REPO, capture_output=True, text=True, check=True
        )
        printed += done.stdout
    assert printed.endswith("\n") and shown.group(1).endswith("\n")
    assert "..." not in printed.splitlines()  # the mark is never a line the tool prints
    assert _is_excerpt(shown.group(1).splitlines(), printed.splitlines())


def test_the_readme_quotes_the_demos_numbers():
    # The prose under the demo quotes the gap count and the rule-of-three bound the demo prints (that block is
    # the demo's output, held by the test above).
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"then the regression check.*?\n```\n(.*?)```\n", readme, flags=re.S)
    assert shown is not None
    printed = re.search(r"at most ([\d.]+)% \(rule of three, n=(\d+)\)", shown.group(1))
    assert printed is not None
    prose = readme[shown.end() :]
    quoted = re.search(r"The (\d+) narration gaps .*?up to ([\d.]+) % of future gaps", prose, flags=re.S)
    assert quoted is not None
    assert (quoted.group(1), quoted.group(2)) == (printed.group(2), printed.group(1))


def test_the_readme_lists_every_command():
    from clock.cli import main

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in main.commands:
        assert f"| `speechclock {name} " in readme, name


def test_the_readme_library_example_runs(monkeypatch, tmp_path):
    pytest.importorskip("pandas")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    code = re.search(r"## Library\n.*?```python\n(.*?)```\n", readme, flags=re.S)
    assert code is not None
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("SPEECHCLOCK_CACHE", str(tmp_path / "cache"))
    exec(compile(code.group(1), "README.md", "exec"), {})


DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "benchmarks" / "README.md"]


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    heads = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", markdown, flags=re.S), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_in_the_docs_resolves(doc):
    text = doc.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", re.sub(r"```.*?```", "", text, flags=re.S))
    assert links or doc.name != "README.md"
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        path, _, anchor = link.partition("#")
        target = (doc.parent / path).resolve() if path else doc
        assert target.exists(), f"{doc.name}: {link}"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target.read_text(encoding="utf-8")), f"{doc.name}: {link}"


def test_the_readme_sums_up_the_benchmarks_without_their_table():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "**FAIL**" not in readme and "| section | measure |" not in readme
    rows = [
        line.split("|")[-2].strip()
        for line in (REPO / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| ") and line.split("|")[-3].strip() not in ("", "target")
    ]
    summary = re.search(r"(\d+) of (\d+) targets pass", readme)
    assert summary is not None
    assert (int(summary.group(1)), int(summary.group(2))) == (rows.count("pass"), len(rows))


def test_the_reference_lives_in_docs():
    """Each part of the reference the README points to holds what it promises."""
    expect = {
        "docs/cli.md": ["Exit codes, outputs and limits", "--jobs N", "exits 130"],
        "docs/ci.md": ["--update-baseline", "actions/cache@v4", "--format github"],
        "docs/cache.md": ["$SPEECHCLOCK_CACHE", "racily clean"],
        "docs/cluster.md": ["--scheduler tcp://", "--nthreads 1"],
        "docs/exactness.md": ["bit-exact", "SignedInt16SampleTypeTraits"],
        "docs/derivation.md": ["rule of three", "Otsu"],
        "docs/recordings.md": ["sample-session-48k.webm", "make.py"],
        "benchmarks/README.md": ["What the misses are", "bench_opus.py"],
    }
    for name, needles in expect.items():
        text = (REPO / name).read_text(encoding="utf-8")
        for needle in needles:
            assert needle in text, (name, needle)


def test_the_readme_is_short_enough_to_read_first():
    # A newcomer's page: the quick start, the commands, the library, links (history lives in CHANGELOG.md).
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    assert not any(line.startswith("## ") and "history" in line.lower() for line in lines)
