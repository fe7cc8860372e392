"""``make figures`` draws every picture in docs/img, and a committed picture drawn from stale data fails.

The recipe's commands are read from the Makefile and run with their outputs in a scratch folder. Each PNG holds
the digest of the data it draws (``clock.report.plot.figure_data_digest``: lines, collections, patches, images,
texts; not pixels, which another matplotlib or other fonts draw differently): a committed figure whose digest is
not the fresh one's was drawn from other data, and ``make figures`` redraws it.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from clock.report.plot import DATA_DIGEST_KEY

REPO = Path(__file__).resolve().parents[2]
IMG = REPO / "docs" / "img"


def recipe() -> tuple[list[str], dict[str, str]]:
    """The figures recipe's commands (continuation lines joined), and the Makefile's simple variables."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^([A-Z_]+) :?= (.*)$", makefile, flags=re.M))
    body = re.search(r"^figures:.*\n((?:\t.*\n)+)", makefile, flags=re.M)
    assert body is not None
    commands = body.group(1).replace("\\\n", " ").splitlines()
    return [c.strip() for c in commands if c.strip()], variables


def digest(path: Path) -> str | None:
    from PIL import Image

    with Image.open(path) as image:
        return image.text.get(DATA_DIGEST_KEY)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """The recipe's commands run from the repository's root, in this process (the command line's own code, without
    an interpreter's start for each)."""
    from click.testing import CliRunner

    from clock.cli import main

    out = tmp_path_factory.mktemp("img")
    commands, variables = recipe()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        for command in commands:
            command = command.replace("$(SAMPLE)", variables["SAMPLE"]).replace("docs/img/", f"{out}/")
            words = shlex.split(command.replace(">/dev/null", ""))
            assert words[0] == "$(BIN)/speechclock", command
            done = CliRunner().invoke(main, words[1:], catch_exceptions=False)
            assert done.exit_code == 0, f"{command}: {done.stderr}"
    return out


def test_make_figures_draws_every_picture_in_docs_img(fresh):
    assert sorted(p.name for p in fresh.glob("*.png")) == sorted(p.name for p in IMG.glob("*.png"))


@pytest.mark.parametrize("name", sorted(p.name for p in IMG.glob("*.png")))
def test_a_committed_figure_draws_the_data_the_tool_draws_now(fresh, name):
    now = digest(fresh / name)
    assert now is not None
    assert digest(IMG / name) == now, f"docs/img/{name} was drawn from other data: run make figures"
