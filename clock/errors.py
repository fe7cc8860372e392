"""Exception and warning types raised by speech-clock.

Every error the library raises on purpose is a :class:`SpeechClockError`, and
also a subclass of the builtin that fits it, so ``except ValueError`` and
``except OSError`` keep working in callers that do not know this package:

=========================  =====================  =======================================
class                      builtin                raised for
=========================  =====================  =======================================
``RecordingError``         ``OSError``            a recording that cannot be opened or
                                                  decoded (missing, a directory, not
                                                  audio, empty, truncated, no audio
                                                  stream, unsupported codec)
``InvalidSignalError``     ``ValueError``         samples that are not finite, or an
                                                  array of the wrong shape
``InvalidParameterError``  ``ValueError``         an option outside its range or an
                                                  unknown name
``EventLogError``          ``ValueError``         a malformed event log line
``ConfigError``            ``ValueError``         a malformed ``speechclock.toml``
=========================  =====================  =======================================

Messages name the file (and line or key) when there is one, then the problem.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "EventLogError",
    "InvalidParameterError",
    "InvalidSignalError",
    "RecordingError",
    "SpeechClockError",
    "SpeechClockWarning",
]


class SpeechClockError(Exception):
    """Root of every error speech-clock raises on purpose."""


class RecordingError(SpeechClockError, OSError):
    """A recording cannot be opened or decoded."""


class InvalidSignalError(SpeechClockError, ValueError):
    """Samples are not finite, or an array has the wrong shape or type."""


class InvalidParameterError(SpeechClockError, ValueError):
    """An option is outside its documented range, or a name is unknown."""


class EventLogError(SpeechClockError, ValueError):
    """An event log line is malformed (the message names the file and line)."""


class ConfigError(SpeechClockError, ValueError):
    """A ``speechclock.toml`` is malformed (the message names the file and key)."""


class SpeechClockWarning(UserWarning):
    """Valid but questionable input: thin evidence, skipped lines, odd timing."""
