"""The tuning notebook runs top to bottom against the public API (so it cannot rot)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "tuning.ipynb"


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # jupyter_client's own, not ours
@pytest.mark.parametrize("where", ["notebooks", "root"])
def test_notebook_executes_and_draws_its_figures(tmp_path, where):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    folder = NOTEBOOK.parent if where == "notebooks" else NOTEBOOK.parent.parent
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 3  # the evidence, the trade-off and the recording plot
    assert any("text/html" in o.get("data", {}) for o in outputs)  # DataFrames
    text = "".join(o.get("text", "") for o in outputs)
    assert "recommended:" in text and "== all: 5 recordings" in text
