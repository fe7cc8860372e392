"""The committed baseline: per recording, beat count, onsets and the longest gap."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .output import atomic_output, json_text

__all__ = ["read_baseline", "write_baseline"]


def read_baseline(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Recording name -> entry; an absent file is an empty baseline.

    Raises
    ------
    ConfigError
        A file that is not a baseline (names the file and the problem).
    """
    p = Path(path)
    if not p.exists():
        return {}
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(f"{p}: not a readable baseline ({err})") from None
    recs = doc.get("recordings") if isinstance(doc, dict) else None
    if doc.get("schema") != 1 or not isinstance(recs, dict):
        raise ConfigError(f"{p}: not a speechclock baseline (needs schema 1 and a 'recordings' object)")
    return recs


def write_baseline(
    path: str | os.PathLike[str], entries: dict[str, dict[str, Any]], *, protect: tuple[Path, ...] = ()
) -> None:
    """Write the baseline atomically (temporary file, then rename), sorted by name."""
    with atomic_output(path, protect=protect) as out:
        out.write(json_text({"schema": 1, "recordings": dict(sorted(entries.items()))}))
