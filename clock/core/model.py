"""The core's shared vocabulary: the tolerances every comparison of times allows.

Pure Python. The core's input types (what a recording gives the derivation)
live here beside them, so that every module reads one definition.
"""

from __future__ import annotations

#: Comparisons of elapsed time against a quiet time allow this for float rounding (times are sums of tick periods).
EPS_S = 1e-9
#: A quiet time stands clear of the longest gap plus the margin by this much (``check`` fails a gap that reaches
#: it).
CLEAR_S = 1e-6
