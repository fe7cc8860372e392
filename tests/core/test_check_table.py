"""clock.core.check runs a table of named checks: every check named once, each a documented function."""

from __future__ import annotations

import inspect

from clock.core.check import CHECK_TABLE, CHECKS


def test_the_table_holds_every_named_check_once():
    assert sorted(CHECK_TABLE) == sorted(CHECKS)
    assert len(set(CHECK_TABLE.values())) == len(CHECK_TABLE)


def test_each_check_is_a_documented_function_that_names_itself():
    for name, check in CHECK_TABLE.items():
        doc = inspect.getdoc(check) or ""
        assert doc.startswith(f"``{name}``"), name
