"""The report's plots as PNG and SVG files, drawn with matplotlib (the plots extra)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .data import ReportData
from .html import MAX_CHORDS
from .svg import (
    MAX_POINTS,
    SCALE,
    chord_control,
    circle_positions,
    colour,
    colour_domain,
    histogram_counts,
    sample_indices,
)


def write_plots(data: ReportData, directory, *, max_chords: int = MAX_CHORDS,
                seed: int = 0) -> list[Path]:
    """s_curve, chords and histogram as .png and .svg in ``directory`` (matplotlib, Agg)."""
    from .._core.extras import require

    matplotlib = require("matplotlib", "--plots")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PathCollection
    from matplotlib.path import Path as MPath

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig, name):
        for ext in ("png", "svg"):
            out = directory / f"{name}.{ext}"
            fig.savefig(out, dpi=110)
            written.append(out)
        plt.close(fig)

    bands, rows = data.bands_rows
    c = data.candidates
    keep = sample_indices(int(c["doc_a"].size), max_chords, seed)

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    s = np.linspace(0, 1, 201)
    ax.plot(s, data.s_curve(s), color="#1f4e9c", lw=2,
            label=f"P(s) = 1 - (1 - s^{rows})^{bands}")
    steep = data.steep_point
    ax.plot([steep], [data.s_curve(steep)], "o", color="#d1495b",
            label=f"steep point {steep:.3f}")
    ax.axvline(data.threshold, color="#888", ls="--", lw=1)
    jitter = np.random.default_rng(seed + 1).uniform(-0.025, 0.025, keep.size)
    ax.scatter(c["jaccard"][keep], 1 + jitter, s=6, alpha=0.5,
               c=np.where(c["verified"][keep], "#1f4e9c", "#e08a1e"), label="candidates")
    if data.missed is not None and data.missed["doc_a"].size:
        ax.scatter(data.missed["jaccard"], np.zeros(data.missed["jaccard"].size), s=6,
                   color="#c0392b", label="missed true pairs")
    ax.set(xlabel=f"similarity s (exact {data.measure})", ylabel="P(candidate)", xlim=(0, 1),
           ylim=(-0.06, 1.06))
    ax.legend(loc="center right", fontsize=8)
    fig.tight_layout()
    save(fig, "s_curve")

    fig, ax = plt.subplots(figsize=(3.2 * 2, 2.6))
    edges, above, below = histogram_counts(c["jaccard"], c["verified"])
    width = edges[1] - edges[0]
    ax.bar(edges[:-1], below, width=width * 0.9, align="edge", color="#e08a1e", label="< t")
    ax.bar(edges[:-1], above, width=width * 0.9, align="edge", bottom=below, color="#1f4e9c",
           label="≥ t")
    ax.axvline(data.threshold, color="#888", ls="--", lw=1)
    ax.set(xlabel=f"exact {data.measure} of candidate pairs", ylabel="pairs", xlim=(0, 1))
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "histogram")

    fig, ax = plt.subplots(figsize=(7, 7.4))
    fig.patch.set_facecolor("#14161c")
    ax.set_facecolor("#14161c")
    x, y, _ = circle_positions(data.ids, 1.0, 0.0, 0.0)
    a, b, jac = c["doc_a"][keep], c["doc_b"][keep], c["jaccard"][keep]
    order = np.argsort(jac, kind="stable")
    a, b, jac = a[order], b[order], jac[order]
    qx, qy = chord_control(x[a], y[a], x[b], y[b], 0.0, 0.0, 1.0)
    paths = [MPath([(x[i], y[i]), (px, py), (x[j], y[j])],
                   [MPath.MOVETO, MPath.CURVE3, MPath.CURVE3]) for i, j, px, py in
             zip(a, b, qx, qy)]
    lo, hi = colour_domain(c["jaccard"])
    coll = PathCollection(paths, facecolors="none", edgecolors=colour(jac, lo, hi),
                          linewidths=0.6, alpha=0.7)
    ax.add_collection(coll)
    if data.n <= MAX_POINTS:
        ax.scatter(x, y, s=2, color="#c9ced8", zorder=3)
    ax.add_patch(plt.Circle((0, 0), 1.0, fill=False, color="#3a3f4b"))
    ax.set(xlim=(-1.1, 1.1), ylim=(-1.1, 1.1), aspect="equal")
    ax.invert_yaxis()  # angles run clockwise from the top, as in the HTML
    ax.axis("off")
    from matplotlib.colors import LinearSegmentedColormap
    cmap = LinearSegmentedColormap.from_list("neardup", SCALE / 255)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(lo, hi))
    bar = fig.colorbar(sm, ax=ax, orientation="horizontal", fraction=0.04, pad=0.02)
    bar.set_label(f"exact {data.measure} of the pair", color="#c9ced8")
    bar.ax.tick_params(colors="#c9ced8")
    title = f"{keep.size:,} chords" + (f" (sample of {c['doc_a'].size:,})"
                                       if keep.size < c["doc_a"].size else "")
    ax.set_title(title, color="#c9ced8")
    save(fig, "chords")
    return written
