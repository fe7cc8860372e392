"""The tuning notebook runs top to bottom against the public API (so it cannot rot), on any recordings folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "tuning.ipynb"
RECORDINGS = NOTEBOOK.parent.parent / "recordings"


def _execute(nb: nbformat.NotebookNode, cwd: Path) -> list:
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def _text(outputs: list) -> str:
    return "".join(o.get("text", "") for o in outputs)


def test_notebook_is_committed_without_outputs_and_takes_its_folder_as_a_parameter():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)
    # papermill injects its cell after the one tagged "parameters"; that cell reads the environment variable.
    (params,) = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert 'RECORDINGS = os.environ.get("SPEECHCLOCK_RECORDINGS", "")' in params.source
    assert "pip install '.[notebook]'" in nb.cells[0].source


def test_the_notebook_extra_brings_what_the_notebook_imports_and_test_brings_it():
    import tomllib

    extras = tomllib.loads((NOTEBOOK.parent.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {req.split(">")[0].split("[")[0] for req in extras["notebook"]}
    assert {"pandas", "ipykernel", "nbclient"} <= names
    assert "speech-clock[notebook]" in extras["test"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # jupyter_client's own, not ours
def test_notebook_executes_in_the_clone_on_the_bundled_recordings(monkeypatch):
    monkeypatch.delenv("SPEECHCLOCK_RECORDINGS", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    outputs = _execute(nb, NOTEBOOK.parent)
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 3  # the evidence, the trade-off and the recording plot
    assert any("text/html" in o.get("data", {}) for o in outputs)  # DataFrames
    text = _text(outputs)
    assert f"recordings: {RECORDINGS}" in text
    assert "recommended:" in text and "== all: 5 recordings" in text


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_notebook_runs_outside_the_clone_on_the_folder_it_is_given(monkeypatch, tmp_path):
    # Your own recordings, anywhere: two of the bundled ones, copied, with their config.
    mine = tmp_path / "my recordings"
    mine.mkdir()
    for p in RECORDINGS.iterdir():
        if p.name.startswith(("short-en-029-44k", "tour-en-us-48k.")) or p.name == "speechclock.toml":
            shutil.copy(p, mine / p.name)
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    monkeypatch.setenv("SPEECHCLOCK_RECORDINGS", str(mine))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    outputs = _execute(nb, elsewhere)
    assert not [o for o in outputs if o.output_type == "error"], [o for o in outputs if o.output_type == "error"]
    text = _text(outputs)
    assert f"recordings: {mine}" in text and "== all: 2 recordings" in text

    # A papermill-style parameter overrides the environment; a folder that is not there is one clear error.
    nb = nbformat.read(NOTEBOOK, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(f"RECORDINGS = {str(tmp_path / 'nowhere')!r}"))
    nb.cells = nb.cells[: at + 3]  # the parameters, the injected cell, and the cell that resolves the folder
    with pytest.raises(Exception, match="nowhere: no such folder"):
        _execute(nb, elsewhere)
