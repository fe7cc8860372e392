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

__all__ = ["junit_xml", "xml_text"]

# Not in XML 1.0's Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold written as an escape (``\\x01``, ``\\udcff``)."""
    return _NOT_XML.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


def junit_xml(results: Sequence[CheckResult], *, suite: str = "speechclock check") -> str:
    """Render results as JUnit XML: one testcase per (recording, check).

    Failures of the same check in one recording become one testcase with
    one line per failure; checks that do not apply are ``skipped``.
    """
    cases: dict[tuple[str, str], list[CheckResult]] = {}
    for r in results:
        cases.setdefault((r.recording, r.check), []).append(r)
    n_fail = sum(any(not r.passed for r in rs) for rs in cases.values())
    n_skip = sum(all(not r.applicable for r in rs) for rs in cases.values())
    root = ET.Element("testsuites", name=suite, tests=str(len(cases)), failures=str(n_fail))
    ts = ET.SubElement(
        root, "testsuite", name=suite, tests=str(len(cases)), failures=str(n_fail), errors="0", skipped=str(n_skip)
    )
    for (recording, check), rs in cases.items():
        case = ET.SubElement(ts, "testcase", classname=xml_text(recording), name=xml_text(check))
        failed = [r for r in rs if not r.passed]
        if failed:
            node = ET.SubElement(case, "failure", message=xml_text(failed[0].line()), type=xml_text(check))
            node.text = xml_text("\n".join(r.line() for r in failed))
        elif all(not r.applicable for r in rs):
            ET.SubElement(case, "skipped", message=xml_text(rs[0].measured))
        else:
            ET.SubElement(case, "system-out").text = xml_text(f"{rs[0].measured} vs {rs[0].threshold}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
