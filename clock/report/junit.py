"""JUnit XML for ``speechclock check`` (a testcase per recording and check).

Every text is made valid XML 1.0: characters XML cannot hold (control
characters, lone surrogates from file names that are not UTF-8, U+FFFE and
U+FFFF) are written as visible escapes such as ``\\x01``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from xml.etree import ElementTree as ET

from ..core.check import CheckResult, check_cases, check_counts

__all__ = ["junit_xml", "xml_text"]

# Not in XML 1.0's Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold written as an escape (``\\x01``, ``\\udcff``)."""
    return _NOT_XML.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


def junit_xml(results: Sequence[CheckResult], *, suite: str = "speechclock check", error: str | None = None) -> str:
    """Render results as JUnit XML: one testcase per (recording, check).

    Failures of the same check in one recording become one testcase with
    one line per failure; checks that do not apply are ``skipped``. With
    ``error`` (the run could not check: bad input or usage), one testcase
    ``speechclock`` / ``input`` holds it as an ``<error>``, so CI shows why.
    """
    counts = check_counts(results)
    n_fail, n_skip = counts.failed, counts.not_applicable
    n_err = int(error is not None)
    tests = str(counts.checks + n_err)
    root = ET.Element("testsuites", name=suite, tests=tests, failures=str(n_fail), errors=str(n_err))
    ts = ET.SubElement(
        root, "testsuite", name=suite, tests=tests, failures=str(n_fail), errors=str(n_err), skipped=str(n_skip)
    )
    if error is not None:
        ET.SubElement(
            ET.SubElement(ts, "testcase", classname="speechclock", name="input"), "error", message=xml_text(error)
        ).text = xml_text(error)
    for c in check_cases(results):
        case = ET.SubElement(ts, "testcase", classname=xml_text(c.recording), name=xml_text(c.check))
        first = c.results[0]
        if c.status == "failed":
            node = ET.SubElement(case, "failure", message=xml_text(c.failures[0].line()), type=xml_text(c.check))
            node.text = xml_text("\n".join(r.line() for r in c.failures))
        elif c.status == "not applicable":
            ET.SubElement(case, "skipped", message=xml_text(first.detail))
        else:
            ET.SubElement(case, "system-out").text = xml_text(f"{first.detail} vs {first.expected}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
