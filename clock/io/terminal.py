"""Text from input, made safe for a terminal: control characters escaped, URL credentials hidden.

File names, event fields and URLs come from the user's files and may hold
control characters (``\\x1b]0;title\\x07`` rewrites a window title, ``\\r``
overwrites a line). Everything a command prints for a person (text tables,
``--format github``, warnings, errors) passes through :func:`printable`;
JSON keeps the strings intact (it escapes them itself).

Both passes are linear in the text, whatever it holds (a 100,000-character
option value is answered at once). A value a message echoes is cut with
:func:`clipped` to :data:`MAX_ECHO` characters, saying how long it was.
"""

from __future__ import annotations

import re

__all__ = ["MAX_ECHO", "clipped", "printable", "redact"]

#: The most characters of a value a message echoes.
MAX_ECHO = 200

# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional overrides that reorder a line.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x1b": "\\x1b", "\x00": "\\x00"}

# The credentials of a URL: scheme://user:password@ (up to the first "@" before the path). A scheme is a
# letter and one or more of letters, digits, "+", "." and "-"; it is found backwards from each "://", so
# that a long run of letters is read once (a regex scanning forwards from each letter is quadratic).
_SCHEME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_USER_END = re.compile(r"[/@\s]")


def redact(text: str) -> str:
    """``text`` with the credentials of every URL in it hidden (linear time).

    >>> redact("https://user:secret@example.com/a.wav: cannot read")
    'https://***@example.com/a.wav: cannot read'
    """
    out: list[str] = []
    done = 0  # text[:done] is in out
    at = text.find("://")
    while at != -1:
        start = at
        while start > done and text[start - 1] in _SCHEME:
            start -= 1
        while start < at - 1 and text[start] not in _LETTERS:  # the scheme begins with a letter
            start += 1
        end = _USER_END.search(text, at + 3)
        if start < at - 1 and end is not None and end.group() == "@":
            out.append(text[done : at + 3] + "***@")
            done = end.end()
            at = text.find("://", done)
        else:
            at = text.find("://", at + 1)
    out.append(text[done:])
    return "".join(out)


def clipped(value: object, limit: int = MAX_ECHO, *, quoted: bool = False) -> str:
    """``value`` as a message echoes it: at most ``limit`` characters, saying how long it was.

    ``quoted`` shows it as Python's ``repr`` does (the length said outside the quotes).

    >>> clipped("x" * 1000, 5)
    'xxxxx... (1,000 characters)'
    """
    text = str(value)
    show = repr if quoted else str
    return show(text) if len(text) <= limit else f"{show(text[:limit])}... ({len(text):,} characters)"


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
