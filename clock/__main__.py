"""``python -m clock``: the speechclock command line."""

from .cli import run

if __name__ == "__main__":  # not again in a worker process that re-imports the main module
    run()
