"""The report's plots as inline SVG made here: the S-curve with every candidate, the
chord circle, the histogram; the colour scale they share."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np

from .data import ReportData

MAX_POINTS = 20_000  # documents drawn as dots on the circle; above, the ring alone

# five stops readable on the dark circle: blue for low similarity, through teal, green
# and yellow, to coral for identical (viridis starts too dark to see there)
SCALE = np.array([[64, 98, 187], [31, 162, 168], [94, 201, 98], [242, 211, 59],
                  [255, 123, 84]], dtype=np.float64)


def esc(value) -> str:
    """Text from the data, safe in element content and in quoted attributes."""
    return html.escape(str(value), quote=True)


def colour(values, lo: float = 0.0, hi: float = 1.0) -> list[str]:
    """'#rrggbb' per value on the report's colour scale over [lo, hi]."""
    x = np.clip((np.asarray(values, dtype=np.float64) - lo) / max(hi - lo, 1e-9), 0.0, 1.0)
    pos = x * (len(SCALE) - 1)
    k = np.minimum(pos.astype(np.int64), len(SCALE) - 2)
    frac = (pos - k)[:, None]
    rgb = np.rint(SCALE[k] * (1 - frac) + SCALE[k + 1] * frac).astype(np.int64)
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
    parts.append(_legend(lo, hi, 20, size + 12, size - 220, f"exact {data.measure} of the pair"))
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
                   f'{esc(shorten(head, 28))}/</text>')
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
    curve = data.s_curve(grid)
    d = "M" + "L".join(f"{sx(s):.1f} {sy(p):.1f}" for s, p in zip(grid, curve))
    steep = data.steep_point
    p_steep = float(data.s_curve(steep))
    p_t = float(data.s_curve(t))
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
                 f'similarity s (exact {data.measure})</text><text transform="translate(14 '
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
                 f'text-anchor="middle" font-size="12">exact {data.measure} of candidate pairs '
                 f'(blue: ≥ t = {data.threshold:g}, orange: below)</text></svg>')
    return "".join(parts)


def shorten(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
