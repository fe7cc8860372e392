"""One list of check results, one set of counts: text, JSON, JUnit, GitHub annotations, the report and the API agree.

Each corpus is checked through every view; the counts each view gives are
read back from what it wrote (not from the code that made it) and compared,
and each count is compared with the result list itself: a check is one
(recording, check) pair, a failure is one failing result (one line).
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from conftest import copy_short_recordings

import clock

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
SUMMARY = re.compile(
    r"(\d+) checks? on (\d+) recordings?: (\d+) failed(?: \((\d+) failures?\))?, (\d+) not applicable, (\d+) passed"
)


def _corpus(tmp: Path, kind: str) -> Path:
    folder = tmp / kind
    if kind == "bundled":
        shutil.copytree(RECORDINGS, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    else:  # two recordings are enough to count (and quicker to report)
        copy_short_recordings(folder)
    if kind == "no-logs":
        for log in folder.glob("*.events.jsonl"):
            log.unlink()
    elif kind == "one-log-missing":
        (folder / "tour-en-us-48k.events.jsonl").unlink()
    return folder


#: (corpus, candidate options): with and without event logs, passing and failing.
CASES = [
    ("bundled", ()),
    ("bundled", ("--quiet-time", "0.5")),
    ("no-logs", ()),
    ("one-log-missing", ("--floor", "0.02")),
]


def _counts_from_summary(line: str) -> dict[str, int]:
    m = SUMMARY.fullmatch(line)
    assert m, line
    checks, recs, failed, failures, na, passed = m.groups()
    return {
        "recordings": int(recs),
        "checks": int(checks),
        "passed": int(passed),
        "failed": int(failed),
        "not_applicable": int(na),
        "failures": int(failures if failures is not None else failed),
    }


@pytest.mark.parametrize(("kind", "options"), CASES, ids=lambda x: x if isinstance(x, str) else " ".join(x) or "-")
def test_every_view_gives_the_same_counts(cli, tmp_path, kind, options, figures_unrendered):
    folder = _corpus(tmp_path, kind)
    junit = tmp_path / "junit.xml"
    text = cli("check", folder, *options, "--junit", junit)
    data = json.loads(cli("check", folder, *options, "--format", "json").stdout)
    github = cli("check", folder, *options, "--format", "github").stdout.splitlines()
    page = tmp_path / "report.html"
    report = cli("report", folder, *options, "-o", page, "--floors", "0.003", "--quiet-times", "2.5")
    assert report.exit_code == 0, report.output

    # The result list itself: (recording, check) pairs by status, and failing results.
    results = data["results"]
    cases: dict[tuple[str, str], list[dict]] = {}
    for r in results:
        cases.setdefault((r["recording"], r["check"]), []).append(r)
    failed = {k for k, rs in cases.items() if any(not r["passed"] for r in rs)}
    na = {k for k, rs in cases.items() if k not in failed and all(not r["applicable"] for r in rs)}
    truth = {
        "recordings": len({r["recording"] for r in results}),
        "checks": len(cases),
        "passed": len(cases) - len(failed) - len(na),
        "failed": len(failed),
        "not_applicable": len(na),
        "failures": sum(not r["passed"] for r in results),
    }
    # Every recording gets every check exactly once (no check twice, as level-agreement once was).
    assert truth["checks"] == truth["recordings"] * len(clock.core.check.CHECKS)
    assert data["counts"] == truth

    # Text: the summary, one line per failure, each check that does not apply named once with its reason.
    lines = text.stdout.splitlines()
    assert text.exit_code == (1 if truth["failed"] else 0)
    assert _counts_from_summary(lines[-1]) == truth
    failure_lines = [r["line"] for r in results if not r["passed"]]
    assert [line for line in lines if line in failure_lines] == failure_lines
    listed = [
        (m[1], check)
        for line in lines
        if (m := re.fullmatch(r"(.+): not applicable: (.+) \((.+)\)", line))
        for check in m[2].split(", ")
    ]
    assert sorted(listed) == sorted(na)

    # JUnit: one testcase per check; failures and skips by check; every failure line inside.
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (int(suite.get("tests")), int(suite.get("failures")), int(suite.get("skipped"))) == (
        truth["checks"],
        truth["failed"],
        truth["not_applicable"],
    )
    assert len(list(suite.iter("testcase"))) == truth["checks"]
    junit_lines = [line for f in suite.iter("failure") for line in f.text.splitlines()]
    # JUnit groups them by check (a testcase each); within one, they come in the order of the other views.
    assert sorted(junit_lines) == sorted(failure_lines)
    for f in suite.iter("failure"):
        inside = f.text.splitlines()
        assert inside == [line for line in failure_lines if line in inside]

    # GitHub: one error per failure, the notice with the same summary.
    errors = [line for line in github if line.startswith("::error ")]
    assert len(errors) == truth["failures"]
    notice = github[-1].split("::", 2)[2].split("%0A")
    assert _counts_from_summary(notice[0].split("; ", 1)[1]) == truth
    assert len(notice) - 1 == len({(rec, r) for (rec, _c) in na for r in [cases[(rec, _c)][0]["detail"]]})

    # The report: its verdict and the same config line.
    verdict = re.search(r'<p class="verdict \w+">(?:PASS|FAIL): ([^<]+)</p>', page.read_text()).group(1)
    assert _counts_from_summary(html.unescape(verdict)) == truth
    assert report.stdout.splitlines() == [lines[0], lines[-1]]
    if kind == "bundled":  # and its beats tables are the command's
        section = page.read_text().split('<section id="beats">')[1].split("</section>")[0]
        rec = "tour-en-us-48k.webm"
        rows = re.findall(r"<tr[^>]*>(.*?)</tr>", section[section.index(rec) :])[:4]
        cells = [" ".join(re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)).split() for r in rows]
        beats = cli("beats", folder / rec, *options).stdout.splitlines()[1:5]
        assert cells == [line.split() for line in beats]

    # The API, with the same thresholds.
    given = dict(zip(options[::2], options[1::2]))
    names = {"--quiet-time": "quiet_s", "--floor": "floor"}
    api = clock.check(folder, thresholds={names[k]: float(v) for k, v in given.items()} or None)
    assert clock.check_counts(api) == clock.CheckCounts(**truth)
    assert [r.line() for r in api if not r.passed] == failure_lines
