"""``python -m clock``: the speechclock command line."""

from .cli import run

run()
