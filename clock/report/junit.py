"""JUnit XML for ``speechclock check`` (a testcase per recording and check)."""

from __future__ import annotations

from collections.abc import Sequence
from xml.etree import ElementTree as ET

from ..core.check import CheckResult

__all__ = ["junit_xml"]


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
        case = ET.SubElement(ts, "testcase", classname=recording, name=check)
        failed = [r for r in rs if not r.passed]
        if failed:
            node = ET.SubElement(case, "failure", message=failed[0].line(), type=check)
            node.text = "\n".join(r.line() for r in failed)
        elif all(not r.applicable for r in rs):
            ET.SubElement(case, "skipped", message=rs[0].measured)
        else:
            ET.SubElement(case, "system-out").text = f"{rs[0].measured} vs {rs[0].threshold}"
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
