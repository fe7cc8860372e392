"""JUnit XML for ``speechclock check`` (a testcase per recording and check).

Every text is made valid XML 1.0: characters XML cannot hold (control
characters, lone surrogates from file names that are not UTF-8, U+FFFE and
U+FFFF) are written as visible escapes such as ``\\x01``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from xml.etree import ElementTree as ET

from ..core.check import CheckResult

__all__ = ["case_counts", "junit_xml", "xml_text"]

# Not in XML 1.0's Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold written as an escape (``\\x01``, ``\\udcff``)."""
    return _NOT_XML.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


def case_counts(results: Sequence[CheckResult]) -> tuple[int, int, int]:
    """(cases, failed, not applicable): the counts the text summary and the JUnit file both give."""
    cases: dict[tuple[str, str], list[CheckResult]] = {}
    for r in results:
        cases.setdefault((r.recording, r.check), []).append(r)
    n_fail = sum(any(not r.passed for r in rs) for rs in cases.values())
    n_skip = sum(all(not r.applicable for r in rs) for rs in cases.values())
    return len(cases), n_fail, n_skip


def junit_xml(results: Sequence[CheckResult], *, suite: str = "speechclock check", error: str | None = None) -> str:
    """Render results as JUnit XML: one testcase per (recording, check).

    Failures of the same check in one recording become one testcase with
    one line per failure; checks that do not apply are ``skipped``. With
    ``error`` (the run could not check: bad input or usage), one testcase
    ``speechclock`` / ``input`` holds it as an ``<error>``, so CI shows why.
    """
    cases: dict[tuple[str, str], list[CheckResult]] = {}
    for r in results:
        cases.setdefault((r.recording, r.check), []).append(r)
    n_cases, n_fail, n_skip = case_counts(results)
    n_err = int(error is not None)
    tests = str(n_cases + n_err)
    root = ET.Element("testsuites", name=suite, tests=tests, failures=str(n_fail), errors=str(n_err))
    ts = ET.SubElement(
        root, "testsuite", name=suite, tests=tests, failures=str(n_fail), errors=str(n_err), skipped=str(n_skip)
    )
    if error is not None:
        ET.SubElement(
            ET.SubElement(ts, "testcase", classname="speechclock", name="input"), "error", message=xml_text(error)
        ).text = xml_text(error)
    for (recording, check), rs in cases.items():
        case = ET.SubElement(ts, "testcase", classname=xml_text(recording), name=xml_text(check))
        failed = [r for r in rs if not r.passed]
        if failed:
            node = ET.SubElement(case, "failure", message=xml_text(failed[0].line()), type=xml_text(check))
            node.text = xml_text("\n".join(r.line() for r in failed))
        elif all(not r.applicable for r in rs):
            ET.SubElement(case, "skipped", message=xml_text(rs[0].detail))
        else:
            ET.SubElement(case, "system-out").text = xml_text(f"{rs[0].detail} vs {rs[0].expected}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
