"""The package's version, below every module that names it (the trace cache's key, the report, ``--version``)."""

__version__ = "0.1.0"
