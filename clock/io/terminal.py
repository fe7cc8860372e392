"""Text from input, made safe for a terminal: control characters escaped, URL credentials hidden.

File names, event fields and URLs come from the user's files and may hold
control characters (``\\x1b]0;title\\x07`` rewrites a window title, ``\\r``
overwrites a line). Everything a command prints for a person (text tables,
``--format github``, warnings, errors) passes through :func:`printable`;
JSON keeps the strings intact (it escapes them itself).
"""

from __future__ import annotations

import re

__all__ = ["printable", "redact"]

# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional overrides that reorder a line.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x1b": "\\x1b", "\x00": "\\x00"}

# The credentials of a URL: scheme://user:password@ (up to the first "@" before the path).
_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]+://)[^/@\s]*@")


def redact(text: str) -> str:
    """``text`` with the credentials of every URL in it hidden.

    >>> redact("https://user:secret@example.com/a.wav: cannot read")
    'https://***@example.com/a.wav: cannot read'
    """
    return _CREDENTIALS.sub(r"\g<scheme>***@", text)


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def printable(text: object, *, newlines: bool = True) -> str:
    """``text`` for a terminal: control characters as ``\\xNN`` (``\\r``), URL credentials hidden.

    Newlines and tabs are kept (``newlines=False`` escapes newlines too, for
    a value inside one line).

    >>> printable("evil\\x1b]0;title\\x07.wav")
    'evil\\\\x1b]0;title\\\\x07.wav'
    """
    out = _CONTROL.sub(_escape, redact(str(text)))
    return out if newlines else out.replace("\n", "\\n")
