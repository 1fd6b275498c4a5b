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
- side-by-side views of a few pairs with the shared lines highlighted (difflib),
  when the texts are at hand, with ``path:line`` of the first shared line.

Every string from the data is escaped (``html.escape(..., quote=True)``); the
page keeps under ``max_bytes`` by cutting lists and diffs, and says what it cut.
A content-security policy forbids any load from outside the page.
"""

from __future__ import annotations

import difflib
import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import lsh

MAX_BYTES = 4_000_000
MIN_BYTES = 50_000
MAX_CHORDS = 5_000
MAX_POINTS = 20_000  # documents drawn as dots on the circle; above, the ring alone
MAX_DIFFS = 12
MAX_MEMBERS = 50  # members listed per cluster
TABLE_NAMES = ("documents", "pairs", "set_pairs", "identical", "candidates", "clusters",
               "evaluation")
TABLE_FORMATS = ("parquet", "csv", "jsonl")
STRING_COLUMNS = ("id", "id_a", "id_b", "cluster", "group")

# five stops readable on the dark circle: blue for low similarity, through teal, green
# and yellow, to coral for identical (viridis starts too dark to see there)
_SCALE = np.array([[64, 98, 187], [31, 162, 168], [94, 201, 98], [242, 211, 59],
                   [255, 123, 84]], dtype=np.float64)

POLICY_REASONS = {
    "first": "the earliest document in input order",
    "longest": "the longest text (characters), ties to the earliest",
    "shortest": "the shortest text (characters), ties to the earliest",
    "field": "the smallest value of the representative field, ties to the earliest",
}


def esc(value) -> str:
    """Text from the data, safe in element content and in quoted attributes."""
    return html.escape(str(value), quote=True)


# ----------------------------------------------------------------------------- data


@dataclass
class ReportData:
    """What the report reads, as columns: from a :class:`FindResult` or a result directory."""

    ids: list[str]
    shingles: np.ndarray  # int64[n]
    status: np.ndarray  # object[n]
    cluster: np.ndarray  # object[n]: id of the cluster's first document
    representative: np.ndarray  # bool[n]
    pairs: dict  # doc_a, doc_b, jaccard: the pairs of distinct sets (their groups' heads)
    head: np.ndarray  # int64[n]: first document with the same shingle set (itself if none)
    candidates: dict  # doc_a, doc_b, jaccard, verified
    summary: dict
    timings: dict
    missed: dict | None = None  # doc_a, doc_b, jaccard: true pairs that were not candidates
    origin: str = "in-memory result"
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def config(self) -> dict:
        return self.summary.get("config") or {}

    @property
    def threshold(self) -> float:
        return float(self.config.get("threshold", self.summary.get("plan", {}).get(
            "threshold", 0.8)))

    @property
    def bands_rows(self) -> tuple[int, int]:
        plan = self.summary.get("plan") or {}
        return int(plan.get("bands", 1)), int(plan.get("rows", 1))


def load(result_or_dir) -> ReportData:
    """ReportData from a FindResult, or from a directory written by ``find --out``."""
    if isinstance(result_or_dir, (str, os.PathLike)):
        return _load_dir(Path(result_or_dir))
    result = result_or_dir
    tables = {"documents": result.documents_table(), "set_pairs": result.set_pairs_table(),
              "identical": result.identical_table(), "candidates": result.candidates_table()}
    evaluation = getattr(result, "evaluation", None)
    if evaluation is not None:
        tables["evaluation"] = (evaluation if isinstance(evaluation, pa.Table)
                                else pa.table(evaluation))
    return _from_tables(tables, result.summary(), dict(result.seconds), "in-memory result")


def _load_dir(directory: Path) -> ReportData:
    from ..sinks import read_manifest

    if not directory.is_dir():
        raise NotADirectoryError(f"result directory {directory} does not exist")
    read_manifest(directory)  # a complete run's folder, every file as the run wrote it
    tables = {}
    for name in TABLE_NAMES:
        for fmt in TABLE_FORMATS:
            path = directory / f"{name}.{fmt}"
            if path.exists():
                tables[name] = read_table(path)
                break
    for needed in ("documents", "candidates", "pairs"):
        if needed not in tables and not (needed == "pairs" and "set_pairs" in tables):
            raise FileNotFoundError(f"{directory} has no {needed}.csv|.jsonl|.parquet; "
                                    f"write it with `neardup find ... --out {directory}`")
    summary_path = directory / "summary.json"
    if not summary_path.exists():
        raise FileNotFoundError(f"{directory} has no summary.json")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    timings_path = directory / "timings.json"
    timings = (json.loads(timings_path.read_text(encoding="utf-8"))
               if timings_path.exists() else {})
    return _from_tables(tables, summary, timings, str(directory))


def read_table(path: Path) -> pa.Table:
    """A result table in any of the formats :mod:`neardup.sinks` writes; ids stay strings."""
    fmt = path.suffix.lstrip(".")
    if fmt == "parquet":
        import pyarrow.parquet as pq
        return pq.read_table(path)
    if fmt == "csv":
        import pyarrow.csv as pa_csv
        types = {name: pa.string() for name in STRING_COLUMNS}
        return pa_csv.read_csv(path, convert_options=pa_csv.ConvertOptions(column_types=types))
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return pa.Table.from_pylist(rows)


def _columns(table: pa.Table | None, names: Sequence[str]) -> dict:
    out = {}
    for name in names:
        if table is not None and name in table.column_names:
            out[name] = table.column(name).to_numpy(zero_copy_only=False)
        else:
            out[name] = np.empty(0)
    return out


def _from_tables(tables: dict, summary: dict, timings: dict, origin: str) -> ReportData:
    docs = tables["documents"]
    order = np.argsort(docs.column("doc").to_numpy(zero_copy_only=False), kind="stable")
    d = {name: docs.column(name).to_numpy(zero_copy_only=False)[order]
         for name in ("id", "shingles", "status", "cluster", "representative")}
    pairs = _columns(tables.get("set_pairs", tables.get("pairs")), ("doc_a", "doc_b", "jaccard"))
    candidates = _columns(tables.get("candidates"), ("doc_a", "doc_b", "jaccard", "verified"))
    for cols in (pairs, candidates):
        for k in ("doc_a", "doc_b"):
            cols[k] = cols[k].astype(np.int64)
        cols["jaccard"] = cols["jaccard"].astype(np.float64)
    candidates["verified"] = candidates["verified"].astype(bool)
    head = np.arange(d["id"].size, dtype=np.int64)
    identical = _columns(tables.get("identical"), ("doc", "head_doc"))
    head[identical["doc"].astype(np.int64)] = identical["head_doc"].astype(np.int64)
    if "set_pairs" not in tables:  # every document pair listed: keep those between heads
        heads = head == np.arange(head.size)
        between = heads[pairs["doc_a"]] & heads[pairs["doc_b"]]
        pairs = {k: v[between] for k, v in pairs.items()}
    missed = None
    evaluation = tables.get("evaluation")
    if evaluation is not None:
        ev = _columns(evaluation, ("doc_a", "doc_b", "jaccard", "candidate"))
        keep = ~ev["candidate"].astype(bool) if ev["candidate"].size else np.ones(
            ev["doc_a"].size, dtype=bool)
        missed = {k: ev[k][keep] for k in ("doc_a", "doc_b", "jaccard")}
        missed["doc_a"] = missed["doc_a"].astype(np.int64)
        missed["doc_b"] = missed["doc_b"].astype(np.int64)
        missed["jaccard"] = missed["jaccard"].astype(np.float64)
    return ReportData(
        ids=[str(x) for x in d["id"]], shingles=d["shingles"].astype(np.int64),
        status=d["status"].astype(object), cluster=d["cluster"].astype(object),
        representative=d["representative"].astype(bool), pairs=pairs, head=head,
        candidates=candidates,
        summary=summary, timings=timings, missed=missed, origin=origin)


# ----------------------------------------------------------------------------- texts


def _text_lookup(data: ReportData, texts=None, root=None):
    """A function doc -> text or None; and a line saying where texts come from."""
    if texts is not None:
        if isinstance(texts, Mapping):
            return (lambda d: texts.get(data.ids[d])), "texts given by the caller"
        if len(texts) != data.n:
            raise ValueError(f"texts has {len(texts)} entries for {data.n} documents")
        return (lambda d: texts[d]), "texts given by the caller"
    roots = []
    if root is not None:
        roots.append((os.fspath(root), ""))
    for src in ((data.summary.get("read") or {}).get("inputs") or []):
        if src.get("format") == "dir":
            prefix = f"{src['name']}/" if src.get("prefixed") else ""
            roots.append((src["path"], prefix))
    if not roots:
        return None, ("texts not available: run `neardup find ... --report`, or give the "
                      "directory the ids are paths in (--root)")

    bases = [(os.path.realpath(base), prefix) for base, prefix in roots]

    def read(d: int):
        doc_id = data.ids[d]
        for base, prefix in bases:
            if prefix and not doc_id.startswith(prefix):
                continue
            path = _file_under(base, doc_id[len(prefix):])
            if path is None:
                continue
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    return f.read()
            except OSError:
                continue
        return None

    return read, "texts re-read from " + ", ".join(base for base, _ in roots)


def _file_under(base: str, relative: str) -> str | None:
    """``base/relative`` if it is a regular file under ``base`` once every link is
    resolved, else None: an id such as /etc/passwd, ../../x or a link out reads nothing."""
    parts = relative.replace("\\", "/").split("/")
    if not relative or os.path.isabs(relative) or ".." in parts:
        return None
    path = os.path.realpath(os.path.join(base, relative))
    if os.path.commonpath([path, base]) != base or not os.path.isfile(path):
        return None
    return path


# ----------------------------------------------------------------------------- drawing


def colour(values, lo: float = 0.0, hi: float = 1.0) -> list[str]:
    """'#rrggbb' per value on the report's colour scale over [lo, hi]."""
    x = np.clip((np.asarray(values, dtype=np.float64) - lo) / max(hi - lo, 1e-9), 0.0, 1.0)
    pos = x * (len(_SCALE) - 1)
    k = np.minimum(pos.astype(np.int64), len(_SCALE) - 2)
    frac = (pos - k)[:, None]
    rgb = np.rint(_SCALE[k] * (1 - frac) + _SCALE[k + 1] * frac).astype(np.int64)
    return [f"#{r:02x}{g:02x}{b:02x}" for r, g, b in rgb.tolist()]


def colour_domain(jaccard: np.ndarray) -> tuple[float, float]:
    """[lo, 1]: lo is the smallest similarity drawn, floored to a tenth."""
    if jaccard.size == 0:
        return 0.0, 1.0
    return min(math.floor(float(jaccard.min()) * 10) / 10, 0.9), 1.0


def sample_indices(total: int, limit: int, seed: int) -> np.ndarray:
    """All of range(total) if it fits, else ``limit`` of them, seeded, in order."""
    if total <= limit:
        return np.arange(total)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(total, size=limit, replace=False))


def circle_positions(ids: Sequence[str], radius: float, cx: float, cy: float):
    """(x, y, angle) per document: on a circle in id order, starting at the top, clockwise."""
    n = len(ids)
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(np.asarray(ids, dtype=object), kind="stable")] = np.arange(n)
    angle = 2 * np.pi * rank / max(n, 1) - np.pi / 2
    return cx + radius * np.cos(angle), cy + radius * np.sin(angle), angle


def chord_control(x1, y1, x2, y2, cx, cy, radius):
    """Quadratic Bézier control point: at the centre for opposite documents,
    at the chord's middle for neighbours (so families in one directory stay at the edge)."""
    mx, my = (x1 + x2) / 2 - cx, (y1 + y2) / 2 - cy
    pull = np.hypot(mx, my) / radius
    return cx + mx * pull, cy + my * pull


def chord_svg(data: ReportData, limit: int, seed: int, size: int = 760) -> tuple[str, dict]:
    """The chord circle; returns (svg, what was drawn)."""
    c = data.candidates
    total = int(c["doc_a"].size)
    keep = sample_indices(total, limit, seed)
    a, b, jac = c["doc_a"][keep], c["doc_b"][keep], c["jaccard"][keep]
    order = np.argsort(jac, kind="stable")  # most similar drawn last, on top
    a, b, jac = a[order], b[order], jac[order]
    cx = cy = size / 2
    radius = size / 2 - 75
    x, y, angle = circle_positions(data.ids, radius, cx, cy)
    lo, hi = colour_domain(c["jaccard"])
    colours = colour(jac, lo, hi)
    qx, qy = chord_control(x[a], y[a], x[b], y[b], cx, cy, radius)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="chords" class="chords" '
             f'viewBox="0 0 {size} {size + 50}" width="{size}" height="{size + 50}" '
             f'data-chords="{keep.size}" data-candidates="{total}" role="img" '
             f'aria-label="chord circle of candidate pairs">',
             f'<rect width="{size}" height="{size + 50}" fill="#14161c"/>',
             f'<circle cx="{cx}" cy="{cy}" r="{radius}" fill="none" stroke="#3a3f4b"/>']
    drawn_points = data.n <= MAX_POINTS
    if drawn_points and data.n:
        ok = data.status == "ok"
        for mask, stroke in ((ok, "#c9ced8"), (~ok, "#5b6170")):
            if mask.any():
                d = "".join(f"M{px:.1f} {py:.1f}h0" for px, py in zip(x[mask], y[mask]))
                parts.append(f'<path d="{d}" stroke="{stroke}" stroke-width="2.5" '
                             f'stroke-linecap="round"/>')
    parts.append(_group_labels(data.ids, angle, cx, cy, radius))
    parts.append('<g fill="none" stroke-width="1" stroke-opacity="0.75" class="chord-set">')
    for k in range(keep.size):
        parts.append(f'<path data-k="{k}" stroke="{colours[k]}" d="M{x[a[k]]:.1f} '
                     f'{y[a[k]]:.1f}Q{qx[k]:.1f} {qy[k]:.1f} {x[b[k]]:.1f} {y[b[k]]:.1f}"/>')
    parts.append("</g>")
    parts.append(_legend(lo, hi, 20, size + 12, size - 220, "exact Jaccard of the pair"))
    parts.append("</svg>")
    involved = np.unique(np.concatenate([a, b])) if keep.size else np.empty(0, np.int64)
    where = {int(d): i for i, d in enumerate(involved)}
    payload = {"ids": [data.ids[d] for d in involved],
               "chords": [[where[int(i)], where[int(j)], round(float(s), 4)]
                          for i, j, s in zip(a, b, jac)]}
    return "".join(parts), {"chords": int(keep.size), "candidates": total,
                            "sampled": bool(keep.size < total), "points": drawn_points,
                            "payload": payload}


def _group_labels(ids, angle, cx, cy, radius, min_share: float = 0.02, most: int = 24) -> str:
    """Top-level directory names at the middle of their arc, for groups big enough to read."""
    n = len(ids)
    if n == 0 or not any("/" in i for i in ids[:1000]):
        return ""
    heads = np.asarray([i.split("/", 1)[0] if "/" in i else "" for i in ids], dtype=object)
    names, counts = np.unique(heads, return_counts=True)
    big = [(c, h) for h, c in zip(names, counts) if h and c >= max(2, min_share * n)]
    out = ['<g font-size="11" fill="#aab1bf">']
    for _, head in sorted(big, reverse=True)[:most]:
        sel = angle[heads == head]
        # circular mean of the group's angles
        mid = math.atan2(float(np.sin(sel).mean()), float(np.cos(sel).mean()))
        tx, ty = cx + (radius + 12) * math.cos(mid), cy + (radius + 12) * math.sin(mid)
        anchor = "start" if math.cos(mid) > 0.2 else "end" if math.cos(mid) < -0.2 else "middle"
        out.append(f'<text x="{tx:.1f}" y="{ty + 4:.1f}" text-anchor="{anchor}">'
                   f'{esc(_short(head, 28))}/</text>')
    out.append("</g>")
    return "".join(out)


def _legend(lo: float, hi: float, x: float, y: float, width: float, title: str) -> str:
    stops = "".join(f'<stop offset="{k / 4:.2f}" stop-color="{c}"/>'
                    for k, c in enumerate(colour(np.linspace(lo, hi, 5), lo, hi)))
    ticks = "".join(
        f'<text x="{x + width * k / 4:.1f}" y="{y + 30}" text-anchor="middle">'
        f'{lo + (hi - lo) * k / 4:.2f}</text>' for k in range(5))
    return (f'<defs><linearGradient id="jscale">{stops}</linearGradient></defs>'
            f'<g font-size="11" fill="#c9ced8" class="legend"><rect x="{x}" y="{y}" '
            f'width="{width}" height="10" fill="url(#jscale)"/>{ticks}'
            f'<text x="{x + width + 8}" y="{y + 9}">{esc(title)}</text></g>')


def s_curve_svg(data: ReportData, limit: int, seed: int) -> tuple[str, dict]:
    """P(s) for the chosen b × r, the steep point, candidates at y = 1, missed pairs at y = 0."""
    bands, rows = data.bands_rows
    t = data.threshold
    w, h, left, right, top, bottom = 640, 380, 56, 20, 24, 48
    pw, ph = w - left - right, h - top - bottom

    def sx(s):
        return left + pw * np.asarray(s)

    def sy(p):
        return top + ph * (1 - np.asarray(p))

    grid = np.linspace(0, 1, 201)
    curve = lsh.s_curve(grid, bands, rows)
    d = "M" + "L".join(f"{sx(s):.1f} {sy(p):.1f}" for s, p in zip(grid, curve))
    steep = lsh.steep_point(bands, rows)
    p_steep = float(lsh.s_curve(steep, bands, rows))
    p_t = float(lsh.s_curve(t, bands, rows))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="s-curve" viewBox="0 0 {w} {h}" '
             f'width="{w}" height="{h}" role="img" aria-label="S-curve">',
             f'<rect width="{w}" height="{h}" fill="#fff"/>', _axes(left, top, pw, ph)]
    parts.append(f'<line x1="{sx(t):.1f}" y1="{top}" x2="{sx(t):.1f}" y2="{top + ph}" '
                 f'stroke="#888" stroke-dasharray="4 3"/><text x="{sx(t) + 4:.1f}" '
                 f'y="{top + ph - 6}" font-size="11" fill="#555">t = {t:g}</text>')
    parts.append(f'<path d="{d}" fill="none" stroke="#1f4e9c" stroke-width="2"/>')
    parts.append(f'<circle cx="{sx(steep):.1f}" cy="{sy(p_steep):.1f}" r="5" fill="#d1495b"/>'
                 f'<text x="{sx(steep) + 8:.1f}" y="{sy(p_steep) + 4:.1f}" font-size="12" '
                 f'fill="#d1495b">steep point (1/b)^(1/r) = {steep:.3f}</text>')
    c = data.candidates
    keep = sample_indices(int(c["doc_a"].size), limit, seed)
    jitter = np.random.default_rng(seed + 1).uniform(-0.025, 0.025, keep.size)
    for verified, fill in ((True, "#1f4e9c"), (False, "#e08a1e")):
        sel = keep[c["verified"][keep] == verified]
        if sel.size:
            pts = "".join(f"M{px:.1f} {py:.1f}h0" for px, py in
                          zip(sx(c["jaccard"][sel]), sy(1 + jitter[np.isin(keep, sel)])))
            parts.append(f'<path class="dots" d="{pts}" stroke="{fill}" stroke-opacity="0.5" '
                         f'stroke-width="4" stroke-linecap="round"/>')
    missed_count = 0
    if data.missed is not None and data.missed["doc_a"].size:
        m = data.missed["jaccard"]
        missed_count = int(m.size)
        sel = sample_indices(m.size, limit, seed)
        mj = np.random.default_rng(seed + 2).uniform(-0.025, 0.025, sel.size)
        pts = "".join(f"M{px:.1f} {py:.1f}h0" for px, py in zip(sx(m[sel]), sy(mj)))
        parts.append(f'<path class="missed" d="{pts}" stroke="#c0392b" stroke-width="4" '
                     f'stroke-linecap="round"/>')
    parts.append(f'<text x="{left + 8}" y="{top + 40}" font-size="12" fill="#222">P(s) = 1 − '
                 f'(1 − s^{rows})^{bands}; P(t) = {p_t:.3f}</text>')
    lx, ly = left + pw * 0.6, top + ph * 0.55
    parts.append(f'<g font-size="11" fill="#333" class="key"><rect x="{lx - 8}" y="{ly - 14}" '
                 f'width="{pw * 0.4}" height="60" fill="#fff" stroke="#ddd"/>')
    for k, (fill, label) in enumerate((("#1f4e9c", "candidate, J ≥ t"),
                                       ("#e08a1e", "candidate, J &lt; t"),
                                       ("#c0392b", "true pair missed (y = 0)"))):
        parts.append(f'<circle cx="{lx}" cy="{ly + 18 * k - 4}" r="3.5" fill="{fill}"/>'
                     f'<text x="{lx + 9}" y="{ly + 18 * k}">{label}</text>')
    parts.append("</g>")
    parts.append(f'<text x="{left + pw / 2}" y="{h - 8}" text-anchor="middle" font-size="12">'
                 f'similarity s (exact Jaccard)</text><text transform="translate(14 '
                 f'{top + ph / 2}) rotate(-90)" text-anchor="middle" font-size="12">'
                 f'P(candidate)</text></svg>')
    return "".join(parts), {"dots": int(keep.size), "missed": missed_count}


def _axes(left, top, pw, ph) -> str:
    out = ['<g font-size="11" fill="#555" stroke="none">']
    for k in range(6):
        v = k / 5
        x, y = left + pw * v, top + ph * (1 - v)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" '
                   f'stroke="#eee"/><line x1="{left}" y1="{y:.1f}" x2="{left + pw}" '
                   f'y2="{y:.1f}" stroke="#eee"/>'
                   f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{v:.1f}</text>'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
               f'stroke="#999"/></g>')
    return "".join(out)


def histogram_counts(jaccard: np.ndarray, verified: np.ndarray, bins: int = 20):
    edges = np.linspace(0, 1, bins + 1)
    above = np.histogram(jaccard[verified], edges)[0]
    below = np.histogram(jaccard[~verified], edges)[0]
    return edges, above, below


def histogram_svg(data: ReportData) -> str:
    c = data.candidates
    edges, above, below = histogram_counts(c["jaccard"], c["verified"])
    w, h, left, right, top, bottom = 640, 260, 56, 20, 24, 44
    pw, ph = w - left - right, h - top - bottom
    peak = max(int((above + below).max()) if above.size else 0, 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="histogram" viewBox="0 0 {w} {h}" '
             f'width="{w}" height="{h}" role="img" aria-label="similarity histogram">',
             f'<rect width="{w}" height="{h}" fill="#fff"/>',
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
             f'stroke="#999"/>']
    bw = pw / (len(edges) - 1)
    for k in range(len(edges) - 1):
        y0 = top + ph
        for count, fill in ((below[k], "#e08a1e"), (above[k], "#1f4e9c")):
            if count:
                bh = ph * count / peak
                y0 -= bh
                parts.append(f'<rect class="bar" x="{left + k * bw + 1:.1f}" y="{y0:.1f}" '
                             f'width="{bw - 2:.1f}" height="{bh:.1f}" fill="{fill}">'
                             f'<title>{edges[k]:.2f}–{edges[k + 1]:.2f}: {count:,}</title>'
                             f'</rect>')
        total = int(above[k] + below[k])
        if total:
            parts.append(f'<text x="{left + (k + 0.5) * bw:.1f}" y="{y0 - 3:.1f}" '
                         f'font-size="9" text-anchor="middle" fill="#333">{total:,}</text>')
    parts.append('<g font-size="11" fill="#555">')
    for k in range(6):
        parts.append(f'<text x="{left + pw * k / 5:.1f}" y="{top + ph + 16}" '
                     f'text-anchor="middle">{k / 5:.1f}</text>')
    parts.append(f'<text x="{left - 6}" y="{top + 8}" text-anchor="end">{peak:,}</text>'
                 f'<text x="{left - 6}" y="{top + ph}" text-anchor="end">0</text></g>')
    tx = left + pw * data.threshold
    parts.append(f'<line x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{top + ph}" stroke="#888" '
                 f'stroke-dasharray="4 3"/><text x="{left + pw / 2}" y="{h - 8}" '
                 f'text-anchor="middle" font-size="12">exact Jaccard of candidate pairs '
                 f'(blue: ≥ t = {data.threshold:g}, orange: below)</text></svg>')
    return "".join(parts)


# ----------------------------------------------------------------------------- sections


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def summary_html(data: ReportData, drawn: dict) -> str:
    s, cfg = data.summary, data.config
    counts = s.get("counts") or {}
    plan = s.get("plan") or {}
    read = s.get("read") or {}
    bands, rows = data.bands_rows
    rows_html = []

    def row(name, value):
        rows_html.append(f"<tr><th>{esc(name)}</th><td>{esc(value)}</td></tr>")

    inputs = read.get("inputs") or []
    if inputs:
        row("inputs", ", ".join(f"{i.get('path')} ({i.get('format')})" for i in inputs))
    row("result", data.origin)
    if read:
        skipped = sum((read.get("skipped") or {}).values())
        failed = sum((read.get("failed") or {}).values())
        row("records", f"{read.get('records_seen', 0):,} seen, {read.get('processed', 0):,} "
                       f"documents, {skipped:,} skipped, {failed:,} failed")
    languages = counts.get("languages") or {}
    kind = (f"code-token ({', '.join(sorted(languages))})" if languages
            else cfg.get("shingle_kind", "?"))
    row("shingling", f"{kind} {cfg.get('shingle_size', '?')}-grams, "
                     f"{cfg.get('hash_bits', '?')}-bit hashes, documents with fewer than "
                     f"{cfg.get('min_shingles', '?')} shingles set aside")
    row("MinHash", f"K = {cfg.get('num_perm', '?')} minima, seed {cfg.get('seed', '?')}"
                   + (f", {cfg['bits']}-bit" if cfg.get("bits") else ""))
    row("LSH", f"b × r = {bands} × {rows} ({plan.get('chosen', '?')}), steep point "
               f"{lsh.steep_point(bands, rows):.3f}, P(t) = "
               f"{float(lsh.s_curve(data.threshold, bands, rows)):.3f}")
    row("threshold", f"exact Jaccard ≥ {data.threshold:g}"
                     + ("" if cfg.get("verify", True) else " (not verified: every candidate)"))
    row("documents", f"{counts.get('documents', data.n):,}: {counts.get('shingled', 0):,} "
                     f"shingled, {counts.get('too_few_shingles', 0):,} set aside, "
                     f"{counts.get('distinct_sets', 0):,} distinct sets")
    row("candidates", f"{counts.get('candidates', drawn['candidates']):,} candidate pairs, "
                      f"{int(data.candidates['verified'].sum()):,} of them at or above t")
    if "identical_pairs" in counts:
        row("pairs", f"{counts['pairs']:,} document pairs: {counts['identical_pairs']:,} "
                     f"inside identical groups (J = 1), {counts['near_duplicate_pairs']:,} "
                     f"between different sets (from {counts['set_pairs']:,} pairs of "
                     f"distinct sets)")
    else:  # a result folder written before document pairs were listed
        row("pairs", f"{counts.get('pairs', data.pairs['doc_a'].size):,}")
    row("clusters", f"{counts.get('clusters', 0):,} holding "
                    f"{counts.get('documents_in_clusters', 0):,} documents; removable "
                    f"{counts.get('removable', 0):,}")
    buckets = counts.get("buckets") or {}
    if buckets.get("buckets_over_limit"):
        row("large buckets", f"{buckets['buckets_over_limit']:,} over "
                             f"{cfg.get('max_bucket')} documents (largest "
                             f"{buckets.get('largest_bucket'):,}), policy "
                             f"{cfg.get('bucket_policy')}: {buckets.get('pairs_avoided', 0):,} "
                             "pairs not generated")
    out = [f'<table class="summary">{"".join(rows_html)}</table>']
    if data.timings:
        total = sum(float(v) for v in data.timings.values()) or 1.0
        bars = "".join(
            f'<tr><th>{esc(k)}</th><td class="num">{float(v):.2f} s</td><td><div class="tbar" '
            f'style="width:{300 * float(v) / total:.0f}px"></div></td></tr>'
            for k, v in data.timings.items())
        out.append(f'<h3>Time per stage</h3><table class="timings">{bars}</table>')
    return "".join(out)


def cluster_entries(data: ReportData, policy: str):
    """(label, members) per cluster of two or more, largest first, members in input order."""
    if data.n == 0:
        return []
    names, inverse, sizes = np.unique(data.cluster, return_inverse=True, return_counts=True)
    first = np.full(names.size, data.n, dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(data.n))
    multi = np.flatnonzero(sizes > 1)
    multi = multi[np.lexsort((first[multi], -sizes[multi]))]
    order = np.argsort(inverse, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(inverse, minlength=names.size))]
    return [(str(names[g]), order[starts[g]:starts[g + 1]]) for g in multi]


def cluster_html(data: ReportData, label: str, members: np.ndarray, pair_j: dict) -> str:
    rep = members[data.representative[members]]
    kept = int(rep[0]) if rep.size else int(members[0])
    others = [int(m) for m in members if m != kept]
    items = [f'<li class="kept"><span class="id">{esc(data.ids[kept])}</span> '
             f'<span class="meta">kept · {int(data.shingles[kept]):,} shingles</span></li>']
    for m in others[:MAX_MEMBERS]:
        a, b = int(data.head[kept]), int(data.head[m])  # a pair of documents is their sets'
        j = 1.0 if a == b else pair_j.get((min(a, b), max(a, b)))
        similarity = f"J = {j:.3f} with the kept one" if j is not None else "linked through others"
        items.append(f'<li><span class="id">{esc(data.ids[m])}</span> <span class="meta">'
                     f'{int(data.shingles[m]):,} shingles · {similarity}</span></li>')
    if len(others) > MAX_MEMBERS:
        items.append(f'<li class="more">… and {len(others) - MAX_MEMBERS:,} more members</li>')
    return (f'<details class="cluster"><summary><b>{members.size:,}</b> documents · keep '
            f'<span class="id">{esc(_short(data.ids[kept], 120))}</span></summary>'
            f'<ul>{"".join(items)}</ul></details>')


def pick_diff_pairs(data: ReportData, most: int) -> np.ndarray:
    """Row indices into ``pairs``: spread evenly over the similarities found, lowest first."""
    p = data.pairs
    if p["doc_a"].size == 0 or most <= 0:
        return np.empty(0, dtype=np.int64)
    near = np.flatnonzero(p["jaccard"] < 1.0)
    pool = near if near.size else np.arange(p["doc_a"].size)
    pool = pool[np.lexsort((pool, p["jaccard"][pool]))]
    if pool.size <= most:
        return pool
    picks = np.unique(np.rint(np.linspace(0, pool.size - 1, most)).astype(np.int64))
    return pool[picks]


def first_shared_line(lines_a: list[str], lines_b: list[str], blocks) -> tuple[int, int] | None:
    """1-based line numbers of the first shared line that is not blank."""
    for blk in blocks:
        for k in range(blk.size):
            if lines_a[blk.a + k].strip():
                return blk.a + k + 1, blk.b + k + 1
    return None


def diff_html(id_a: str, id_b: str, text_a: str, text_b: str, jaccard: float,
              max_lines: int = 2000, context: int = 3, max_block: int = 40) -> str:
    """Two columns; shared lines highlighted, long shared runs folded."""
    lines_a, lines_b = text_a.splitlines()[:max_lines], text_b.splitlines()[:max_lines]
    matcher = difflib.SequenceMatcher(None, lines_a, lines_b, autojunk=False)
    rows = []

    def cell(no, line, cls):
        if no is None:
            return '<td class="no"></td><td class="empty"></td>'
        return f'<td class="no">{no}</td><td class="{cls}">{esc(_short(line, 240))}</td>'

    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            span = a1 - a0
            show = (list(range(span)) if span <= 2 * context + 1
                    else list(range(context)) + [None] + list(range(span - context, span)))
            for k in show:
                if k is None:
                    rows.append(f'<tr class="fold"><td colspan="4">⋯ {span - 2 * context:,} '
                                f'shared lines ⋯</td></tr>')
                else:
                    rows.append("<tr>" + cell(a0 + k + 1, lines_a[a0 + k], "same")
                                + cell(b0 + k + 1, lines_b[b0 + k], "same") + "</tr>")
        else:
            height = max(a1 - a0, b1 - b0)
            for k in range(min(height, max_block)):
                ia, ib = a0 + k, b0 + k
                rows.append("<tr>"
                            + cell(ia + 1 if ia < a1 else None, lines_a[ia] if ia < a1 else "",
                                   "only")
                            + cell(ib + 1 if ib < b1 else None, lines_b[ib] if ib < b1 else "",
                                   "only") + "</tr>")
            if height > max_block:
                rows.append(f'<tr class="fold"><td colspan="4">⋯ {height - max_block:,} more '
                            f'differing lines ⋯</td></tr>')
    first = first_shared_line(lines_a, lines_b, matcher.get_matching_blocks())
    where = (f'<div class="where">first shared line: <code>{esc(id_a)}:{first[0]}</code> ↔ '
             f'<code>{esc(id_b)}:{first[1]}</code></div>' if first else
             '<div class="where">no line in common (similar shingles across lines)</div>')
    cut = ""
    if len(text_a.splitlines()) > max_lines or len(text_b.splitlines()) > max_lines:
        cut = f'<div class="note">only the first {max_lines:,} lines of each are compared</div>'
    return (f'<details class="pair" open><summary>J = {jaccard:.3f} · '
            f'<span class="id">{esc(_short(id_a, 100))}</span> ↔ '
            f'<span class="id">{esc(_short(id_b, 100))}</span></summary>{where}{cut}'
            f'<table class="diff"><colgroup><col class="no"><col><col class="no"><col>'
            f'</colgroup>{"".join(rows)}</table></details>')


def _json_for_script(obj) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' survive (so no '</script>')."""
    return (json.dumps(obj, ensure_ascii=False).replace("<", "\\u003c")
            .replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;
background:#f6f7f9}main{max-width:1320px;margin:0 auto;padding:20px 28px}
h1{font-size:22px;margin:4px 0 12px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid
#dde1e8;padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
.note{background:#fff6e0;border-left:4px solid #e0a31e;padding:6px 10px;margin:8px 0}
table.summary th,table.timings th{text-align:left;padding:2px 14px 2px 0;font-weight:600;
vertical-align:top;white-space:nowrap}table.summary td{padding:2px 0}
td.num{text-align:right;padding-right:8px;font-variant-numeric:tabular-nums}
.tbar{height:10px;background:#1f4e9c;border-radius:2px}
.plots{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}.plots figure{margin:0}
figcaption{font-size:12px;color:#555;max-width:640px}svg{display:block;max-width:100%;
height:auto}.chords path[data-k]{cursor:pointer}.chords path.sel{stroke:#ff4d6d;
stroke-width:3;stroke-opacity:1}#chord-info{min-height:1.4em;font-size:13px;margin-top:6px}
.id{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;word-break:break-all}
.meta{color:#667;font-size:12px}details.cluster{background:#fff;border:1px solid #dde1e8;
border-radius:4px;margin:4px 0;padding:4px 8px}details ul{margin:4px 0 4px 8px;padding-left:14px}
li.kept .id{font-weight:700}details.pair{background:#fff;border:1px solid #dde1e8;
border-radius:4px;margin:10px 0;padding:6px 8px}.where{font-size:12.5px;margin:4px 0}
table.diff{border-collapse:collapse;width:100%;table-layout:fixed;
font:12px/1.35 ui-monospace,Menlo,Consolas,monospace}table.diff col.no{width:44px}
table.diff td{padding:0 6px;white-space:pre-wrap;word-break:break-all;vertical-align:top}
td.no{color:#99a;text-align:right;user-select:none}td.same{background:#dff3e4}
td.only{background:#fff}td.empty{background:#f3f4f6}tr.fold td{color:#778;text-align:center;
background:#f3f4f6}
"""

SCRIPT = """
(function(){
  var data = JSON.parse(document.getElementById('chord-data').textContent);
  var svg = document.getElementById('chords');
  var info = document.getElementById('chord-info');
  var selected = null;
  svg.addEventListener('click', function(ev){
    var el = ev.target.closest('path[data-k]');
    if (!el) return;
    if (selected) selected.classList.remove('sel');
    selected = el; el.classList.add('sel');
    var c = data.chords[Number(el.getAttribute('data-k'))];
    info.textContent = data.ids[c[0]] + '  \\u2194  ' + data.ids[c[1]] + '   J = ' + c[2];
  });
})();
"""


# ----------------------------------------------------------------------------- the page


def render(data: ReportData, *, texts=None, root=None, max_bytes: int = MAX_BYTES,
           max_chords: int = MAX_CHORDS, max_diffs: int = MAX_DIFFS,
           seed: int = 0) -> tuple[str, dict]:
    """The page as a string, and what it drew, sampled and cut."""
    if not isinstance(max_bytes, int) or max_bytes < MIN_BYTES:
        raise ValueError(f"max_bytes must be an integer >= {MIN_BYTES}, got {max_bytes!r}")
    if not isinstance(max_chords, int) or max_chords < 0:
        raise ValueError(f"max_chords must be a non-negative integer, got {max_chords!r}")
    notes: list[str] = []
    limit = max_chords
    while True:  # the plots must leave room for the lists: fewer chords until they do
        chords, drawn = chord_svg(data, limit, seed)
        curve, curve_drawn = s_curve_svg(data, limit, seed)
        fixed = len(chords.encode()) + len(curve.encode()) + len(
            _json_for_script(drawn["payload"]).encode())
        if fixed <= 0.6 * max_bytes or limit == 0:
            break
        limit //= 2
    if drawn["sampled"]:
        notes.append(f"{drawn['candidates']:,} candidate pairs: the chord circle and the "
                     f"S-curve show a seeded sample of {drawn['chords']:,} (seed {seed}).")
    if not drawn["points"]:
        notes.append(f"{data.n:,} documents: too many to draw one by one; the ring stands "
                     "for them.")
    head = _page_head(data)
    policy = str(data.config.get("representative", "first"))
    plots = (
        '<h2>Candidates and the S-curve</h2><div class="plots"><figure>' + curve
        + f'<figcaption>The probability that a pair of similarity s becomes a candidate, '
          f'for {data.bands_rows[0]} bands of {data.bands_rows[1]} rows. Each dot on y = 1 is '
          f'a candidate pair at its exact Jaccard'
        + (f"; the {curve_drawn['missed']:,} dots on y = 0 are true pairs LSH missed."
           if data.missed is not None else
           "; true pairs that were never candidates are not known for this run "
           "(no evaluation table).")
        + '</figcaption></figure><figure>' + histogram_svg(data)
        + '<figcaption>Exact similarity of every candidate pair. Identical copies are grouped '
          'before LSH and are not candidates.</figcaption></figure></div>'
        + '<h2>Chord circle</h2><figure>' + chords
        + '<figcaption>Every document is a point on the circle, in id (path) order from the '
          'top, clockwise; a chord joins each candidate pair, coloured by its exact Jaccard. '
          'Short chords at the edge are families in one directory, long ones copies across '
          'the tree. Click a chord to name its pair.</figcaption>'
          '<div id="chord-info" aria-live="polite"></div></figure>'
        + f'<script type="application/json" id="chord-data">'
          f'{_json_for_script(drawn["payload"])}</script>')
    tail = f"<script>{SCRIPT}</script></main></body></html>"
    budget = max_bytes - len(head.encode()) - len(plots.encode()) - len(tail.encode()) - 4000
    summary = summary_html(data, drawn)
    budget -= len(summary.encode())

    clusters = cluster_entries(data, policy)
    shown_members = (np.concatenate([m for _, m in clusters[:2000]]) if clusters
                     else np.empty(0, np.int64))
    touch = np.isin(data.pairs["doc_a"], data.head[shown_members])
    pair_j = {(int(a), int(b)): float(j) for a, b, j in zip(
        data.pairs["doc_a"][touch], data.pairs["doc_b"][touch], data.pairs["jaccard"][touch])}
    cluster_parts, used = [], 0
    cluster_budget = budget // 2 if texts is not None or root is not None or _has_dir_inputs(
        data) else budget
    for label, members in clusters:
        piece = cluster_html(data, label, members, pair_j)
        if used + len(piece.encode()) > cluster_budget:
            break
        cluster_parts.append(piece)
        used += len(piece.encode())
    if len(cluster_parts) < len(clusters):
        notes.append(f"showing the {len(cluster_parts):,} largest of {len(clusters):,} "
                     f"clusters (page limit {max_bytes:,} bytes).")
    budget -= used
    cluster_section = (
        f'<h2>Clusters, largest first ({len(clusters):,})</h2><p>The kept document '
        f'(representative) is {esc(POLICY_REASONS.get(policy, policy))} '
        f'(policy <code>{esc(policy)}</code>). Click a cluster to list its members.</p>'
        + ("".join(cluster_parts) or "<p>No clusters.</p>"))

    lookup, text_origin = _text_lookup(data, texts, root)
    diff_parts, diff_rows = [], pick_diff_pairs(data, max_diffs) if lookup else []
    unreadable = 0
    for row in diff_rows:
        a, b = int(data.pairs["doc_a"][row]), int(data.pairs["doc_b"][row])
        ta, tb = lookup(a), lookup(b)
        if ta is None or tb is None:
            unreadable += 1
            continue
        piece = diff_html(data.ids[a], data.ids[b], ta, tb, float(data.pairs["jaccard"][row]))
        if len(piece.encode()) > budget:
            notes.append(f"showing {len(diff_parts)} of {len(diff_rows)} pair views "
                         f"(page limit {max_bytes:,} bytes).")
            break
        budget -= len(piece.encode())
        diff_parts.append(piece)
    if unreadable:
        notes.append(f"{unreadable} pair views left out: a text could not be read.")
    diff_section = ('<h2>Pairs side by side</h2><p>' + esc(text_origin)
                    + ". Pairs spread over the similarities found, lowest first; shared lines "
                      "are green.</p>" + "".join(diff_parts))
    note_html = "".join(f'<div class="note">{esc(n)}</div>' for n in notes)
    page = (head + note_html + "<h2>Summary</h2>" + summary + plots + cluster_section
            + diff_section + tail)
    size = len(page.encode())
    if size > max_bytes:  # only when the fixed parts alone do not fit
        raise ValueError(f"the report needs {size:,} bytes even after cutting; raise max_bytes")
    return page, {"bytes": size, "documents": data.n, "chords": drawn["chords"],
                  "candidates": drawn["candidates"], "sampled": drawn["sampled"],
                  "dots": curve_drawn["dots"], "missed": curve_drawn["missed"],
                  "clusters_shown": len(cluster_parts), "clusters": len(clusters),
                  "pair_views": len(diff_parts), "notes": notes}


def _has_dir_inputs(data: ReportData) -> bool:
    return any(i.get("format") == "dir"
               for i in ((data.summary.get("read") or {}).get("inputs") or []))


def _page_head(data: ReportData) -> str:
    bands, rows = data.bands_rows
    title = f"neardup report: {data.n:,} documents, t = {data.threshold:g}, {bands} × {rows}"
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body><main>"
            f"<h1>{esc(title)}</h1>")


def write_report(result_or_dir, path, *, texts=None, root=None, max_bytes: int = MAX_BYTES,
                 max_chords: int = MAX_CHORDS, max_diffs: int = MAX_DIFFS, seed: int = 0,
                 plots=None) -> dict:
    """Write the HTML report of a FindResult or a ``find --out`` directory to ``path``.

    texts: the documents' texts (a sequence in document order, or a mapping id → text)
    for the side-by-side pair views; without them, files are re-read from ``root``
    or from the directories the run read. plots: a directory for the same plots as
    PNG and SVG (matplotlib). Returns what was drawn, sampled and cut.
    """
    if isinstance(result_or_dir, (str, os.PathLike)):
        from ..sinks.staging import refuse_touching_inputs

        sources = [result_or_dir] + ([root] if root is not None else [])
        refuse_touching_inputs(sources, {"--out": path, "--plots": plots})
    data = load(result_or_dir)
    page, drawn = render(data, texts=texts, root=root, max_bytes=max_bytes,
                         max_chords=max_chords, max_diffs=max_diffs, seed=seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    drawn["path"] = str(path)
    if plots is not None:
        drawn["plots"] = [str(p) for p in write_plots(data, plots, max_chords=max_chords,
                                                      seed=seed)]
    return drawn


# ----------------------------------------------------------------------------- matplotlib


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
    ax.plot(s, lsh.s_curve(s, bands, rows), color="#1f4e9c", lw=2,
            label=f"P(s) = 1 - (1 - s^{rows})^{bands}")
    steep = lsh.steep_point(bands, rows)
    ax.plot([steep], [lsh.s_curve(steep, bands, rows)], "o", color="#d1495b",
            label=f"steep point {steep:.3f}")
    ax.axvline(data.threshold, color="#888", ls="--", lw=1)
    jitter = np.random.default_rng(seed + 1).uniform(-0.025, 0.025, keep.size)
    ax.scatter(c["jaccard"][keep], 1 + jitter, s=6, alpha=0.5,
               c=np.where(c["verified"][keep], "#1f4e9c", "#e08a1e"), label="candidates")
    if data.missed is not None and data.missed["doc_a"].size:
        ax.scatter(data.missed["jaccard"], np.zeros(data.missed["jaccard"].size), s=6,
                   color="#c0392b", label="missed true pairs")
    ax.set(xlabel="similarity s (exact Jaccard)", ylabel="P(candidate)", xlim=(0, 1),
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
    ax.set(xlabel="exact Jaccard of candidate pairs", ylabel="pairs", xlim=(0, 1))
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
    cmap = LinearSegmentedColormap.from_list("neardup", _SCALE / 255)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(lo, hi))
    bar = fig.colorbar(sm, ax=ax, orientation="horizontal", fraction=0.04, pad=0.02)
    bar.set_label("exact Jaccard of the pair", color="#c9ced8")
    bar.ax.tick_params(colors="#c9ced8")
    title = f"{keep.size:,} chords" + (f" (sample of {c['doc_a'].size:,})"
                                       if keep.size < c["doc_a"].size else "")
    ax.set_title(title, color="#c9ced8")
    save(fig, "chords")
    return written
