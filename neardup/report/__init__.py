"""One self-contained HTML page that shows what a run found, and why.

The page draws, as inline SVG made here (no network, no external scripts or fonts):

- the S-curve P(s) = 1 - (1 - s^r)^b of the chosen b × r (see :mod:`neardup.lsh`),
  its steep point (1/b)^(1/r), and every candidate pair as a dot at its exact
  Jaccard on the line y = 1 ("became a candidate"); true pairs that LSH missed,
  when an evaluation table says which, lie on y = 0;
- the chord circle: every document a point on a circle in id (path) order, one
  chord per candidate pair coloured by its exact Jaccard. Above ``max_chords``
  a seeded sample is drawn and the page says so; the SVG carries
  ``data-chords="N"``, the number of chords drawn;
- a histogram of the candidates' exact similarities, split at the threshold;
- clusters, largest first, with the representative and the policy that chose it;
- the most repeated lines (boilerplate), when the texts are at hand;
- side-by-side views of a few pairs with the shared lines highlighted (difflib),
  when the texts are at hand, with ``path:line`` of the first shared line.

Every string from the data is escaped (``html.escape(..., quote=True)``); the
page keeps under ``max_bytes`` by cutting lists and diffs, and says what it cut.
A content-security policy forbids any load from outside the page.
"""

from __future__ import annotations

import os
from pathlib import Path

from .data import ReportData, load, read_table
from .html import MAX_BYTES, MAX_CHORDS, MAX_DIFFS, render
from .plots import write_plots

__all__ = ["MAX_BYTES", "MAX_CHORDS", "MAX_DIFFS", "ReportData", "load", "read_table", "render",
           "write_plots", "write_report"]


def write_report(result_or_dir, path, *, texts=None, root=None, max_bytes: int = MAX_BYTES,
                 max_chords: int = MAX_CHORDS, max_diffs: int = MAX_DIFFS, seed: int = 0,
                 plots=None, repeats: list[dict] | None = None) -> dict:
    """Write the HTML report of a FindResult or a ``find --out`` directory to ``path``.

    texts: the documents' texts (a sequence in document order, or a mapping id → text)
    for the side-by-side pair views; without them, files are re-read under ``root``
    (the directory the ids are paths in), and for a FindResult also under the
    directories its run read. A folder's summary is not trusted to say where to read
    (anyone who edits it can recompute its SHA-256s): without ``root`` its report shows
    no texts and says how to get them. A path leaving its directory (an absolute id,
    ``..``, a link out) is never read. plots: a directory for the same plots as PNG and
    SVG (matplotlib). repeats: the most repeated lines (rows of :func:`neardup.repeats`),
    shown in a section of their own. Returns what was drawn, sampled and cut.
    """
    if isinstance(result_or_dir, (str, os.PathLike)):
        from ..sinks.staging import refuse_touching_inputs

        sources = [result_or_dir] + ([root] if root is not None else [])
        refuse_touching_inputs(sources, {"--out": path, "--plots": plots})
    data = load(result_or_dir)
    page, drawn = render(data, texts=texts, root=root, max_bytes=max_bytes,
                         max_chords=max_chords, max_diffs=max_diffs, seed=seed,
                         repeats=repeats)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    drawn["path"] = str(path)
    if plots is not None:
        drawn["plots"] = [str(p) for p in write_plots(data, plots, max_chords=max_chords,
                                                      seed=seed)]
    return drawn
