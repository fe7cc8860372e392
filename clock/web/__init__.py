"""The page's side: ``speechclock.js``, the reference page clock, and its configuration.

``speechclock.js`` (a classic script; also ``docs/speechclock.js``, a link),
``speechclock.mjs`` (an ES module), ``speechclock.cjs`` (CommonJS) and
``speechclock-worklet.js`` (the AudioWorklet's module) are built from one
source, ``src/``, by ``build.py``; with the types, ``LICENSE`` and
``package.json`` they are the npm package (``npm pack ./clock/web``). The clock
decides as :func:`clock.core.replay.replay_ticks` replays, tick for tick;
``docs/clock.md`` documents it. Its configuration is the ``[thresholds]``
table of ``speechclock.toml``, with the same keys: :func:`page_config` and
:func:`page_config_js` write it (``speechclock derive --format js``).
"""

from __future__ import annotations

import json
import math
from importlib.resources import files
from typing import Any

from ..core.recommend.rules import Rule
from ..core.thresholds import LEVEL, Thresholds

__all__ = ["PAGE_KEYS", "RULE_KEYS", "page_config", "page_config_js", "script"]

#: The keys ``speechclock.js`` reads, as ``[thresholds]`` in speechclock.toml names them.
PAGE_KEYS = ("floor", "quiet_s", "onset_timeout_s", "tick_s", "fft_size")
#: The keys of a rule that ends beats sooner on the provider's event (:mod:`clock.core.recommend.rules`), after those.
RULE_KEYS = ("rule", "hangover_s")


def script(name: str = "speechclock.js") -> str:
    """The text of a script shipped with the package (``speechclock.js``, the classic script, by default)."""
    return files(__name__).joinpath(name).read_text(encoding="utf-8")


def page_config(thresholds: Thresholds, *, rule: Rule | None = None) -> dict[str, Any]:
    """The page clock's configuration: :data:`PAGE_KEYS`, ``tick_s`` as an exact ratio (``"1/60"``).

    An infinite onset timeout is written as ``null`` (JSON has no infinity);
    the clock reads ``null`` as "wait forever". With a ``rule`` other than the
    level clock, :data:`RULE_KEYS` follow (its kind, and its hangover or
    ``null``); its quiet time is the thresholds'.
    """
    tick = thresholds.tick_s
    timeout = thresholds.onset_timeout_s
    config: dict[str, Any] = {
        "floor": thresholds.floor,
        "quiet_s": thresholds.quiet_s,
        "onset_timeout_s": timeout if math.isfinite(timeout) else None,
        "tick_s": f"{tick.numerator}/{tick.denominator}",
        "fft_size": thresholds.fft_size,
    }
    if rule is not None and rule.kind != LEVEL:
        config |= {"rule": rule.kind, "hangover_s": rule.hangover_s}
    return config


def page_config_js(thresholds: Thresholds, *, source: str, rule: Rule | None = None) -> str:
    """``page_config`` as a line of JavaScript to paste above ``new SpeechClock(analyser, SPEECHCLOCK_CONFIG)``."""
    body = json.dumps(page_config(thresholds, rule=rule), allow_nan=False)
    return f"// speechclock: {source}\nconst SPEECHCLOCK_CONFIG = {body};\n"
