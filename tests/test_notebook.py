"""The notebook in notebooks/ runs a small protocol and draws the report's plots."""

from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "protocol.ipynb"
TIMEOUT_S = 600
"""Per-cell timeout; the whole notebook takes well under a minute."""


def test_notebook_executes_and_draws_the_plots(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 4
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "langmem_plus" in text and "A1 grid" in text and "key_error_recurrence_drops_50pct" in text
