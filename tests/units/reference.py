"""The brute-force reference of neardup.units: the units cut by plain Python from the
rules in neardup/units/split.py's docstring, each normalized alone, each compared with
every earlier one."""

from __future__ import annotations

SPACE = b" \t\n\r\x0b\x0c"


def _lines(raw: bytes):
    """(text_start, text_end, cut_start, cut_end) of every line, blank ones included."""
    out, p = [], 0
    while p < len(raw):
        q = raw.find(b"\n", p)
        cut = len(raw) if q < 0 else q + 1
        end = len(raw) if q < 0 else q
        if end > p and raw[end - 1:end] == b"\r":
            end -= 1
        out.append((p, end, p, cut))
        p = cut
    return out


def blank(raw: bytes) -> bool:
    return all(b in SPACE for b in raw)


def lines(raw: bytes):
    return [u for u in _lines(raw) if not blank(raw[u[0]:u[1]])]


def paragraphs(raw: bytes):
    out, current = [], None  # current: [start, text_end, closed]
    for start, end, _, _ in _lines(raw):
        if blank(raw[start:end]):
            if current is not None:
                current[2] = True
            continue
        if current is not None and current[2]:
            out.append((current[0], current[1], current[0], start))
            current = None
        if current is None:
            current = [start, end, False]
        current[1] = end
    if current is not None:
        out.append((current[0], current[1], current[0], len(raw)))
    return out


def sentences(raw: bytes):
    out, p, n = [], 0, len(raw)
    while p < n:
        s = p
        while s < n and raw[s] in SPACE:
            s += 1
        if s >= n:
            break
        q = s
        while q < n:
            if raw[q] == 10:
                break
            if raw[q] in b".!?":
                r = q
                while r < n and raw[r] in b".!?":
                    r += 1
                while r < n and raw[r] in b")\"']":
                    r += 1
                q = r
                if r >= n or raw[r] in SPACE:
                    break
                continue
            q += 1
        end = q
        while end > s and raw[end - 1] in SPACE:
            end -= 1
        cut = q
        while cut < n and raw[cut] in SPACE:
            cut += 1
        out.append((s, end, s, cut))
        p = cut
    return out


SPLITTERS = {"line": lines, "paragraph": paragraphs, "sentences": sentences}
ALONE = ((0x2E80, 0x2FDF), (0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
         (0xF900, 0xFAFF), (0x20000, 0x323AF))  # Han and kana: a word each


def words(text: str) -> int:
    """Runs between whitespace (str.isspace, and U+3000-U+303F); Han and kana alone."""
    n, inside = 0, False
    for ch in text:
        c = ord(ch)
        if ch.isspace() or 0x3000 <= c <= 0x303F:
            inside = False
        elif any(lo <= c <= hi for lo, hi in ALONE):
            n, inside = n + 1, False
        elif not inside:
            n, inside = n + 1, True
    return n


def short(key, minimum) -> bool:
    """A unit's key (its normalized text, or a window's tuple of them) is under
    ``minimum`` (characters, words): the sums over a window's sentences."""
    parts = key if isinstance(key, tuple) else (key,)
    return (sum(len(p) for p in parts) < minimum[0]
            or sum(words(p) for p in parts) < minimum[1])


def reference(texts, unit: str, keep: str, normalize, min_chars: int = 1,
              minimum: tuple[int, int] = (0, 3)):
    """What neardup.units should find: removed byte ranges per document (merged), the
    texts left, the documents kept, and the counts. ``minimum``: (characters, words) a
    unit needs to be removed or listed (the library's default: (0, 3))."""
    kind, _, number = unit.partition(":")
    raws = [t.encode("utf-8") for t in texts]
    units = []  # (doc, key, (cut ranges)) in input order
    sentence_total = 0
    for d, raw in enumerate(raws):
        cut = [(u, normalize(raw[u[0]:u[1]].decode("utf-8"))) for u in SPLITTERS[kind](raw)]
        cut = [(u, key) for u, key in cut if key]
        if kind == "sentences":
            width = int(number)
            sentence_total += len(cut)
            for k in range(len(cut) - width + 1):
                window = cut[k:k + width]
                units.append((d, tuple(key for _, key in window),
                              [u[2:] for u, _ in window], window))
        else:
            units += [(d, key, [u[2:]], [(u, key)]) for u, key in cut]
    policy = []
    for i, (_, key, _, _) in enumerate(units):
        earlier = any(units[j][1] == key for j in range(i))
        if keep == "first":
            policy.append(earlier)
        else:
            policy.append(earlier or any(units[j][1] == key for j in range(i + 1, len(units))))
    shorts = [short(key, minimum) for _, key, _, _ in units]
    removed = [gone and not s for gone, s in zip(policy, shorts)]
    ranges = [set() for _ in raws]
    for (d, _, cuts, _), gone in zip(units, removed):
        if gone:
            for a, b in cuts:
                ranges[d].update(range(a, b))
    left, merged = [], []
    for d, raw in enumerate(raws):
        left.append(bytes(b for k, b in enumerate(raw) if k not in ranges[d]).decode("utf-8"))
        spans, k = [], 0
        gone = sorted(ranges[d])
        for b in gone:
            if spans and spans[-1][1] == b:
                spans[-1][1] = b + 1
            else:
                spans.append([b, b + 1])
        merged.append([tuple(s) for s in spans])
    kept = [not ranges[d] or len(t.strip()) >= min_chars for d, t in enumerate(left)]
    repeated_keys = [key for key in {key for _, key, _, _ in units}
                     if sum(1 for u in units if u[1] == key) >= 2]
    counts = {"units": len(units), "units_removed": sum(removed),
              "units_kept": len(units) - sum(removed),
              "units_distinct": len({key for _, key, _, _ in units}),
              "units_repeated": sum(1 for key in repeated_keys if not short(key, minimum)),
              "units_short": sum(shorts),
              "units_short_repeated": sum(1 for key in repeated_keys if short(key, minimum)),
              "units_short_spared": sum(1 for gone, s in zip(policy, shorts) if gone and s),
              "bytes_removed": sum(len(r) for r in ranges),
              "documents_changed": sum(1 for r in ranges if r)}
    if kind == "sentences":
        counts["sentences"] = sentence_total
    repeats = {}
    for d, key, _, window in units:
        entry = repeats.setdefault(key, {"count": 0, "docs": set(), "first": None})
        entry["count"] += 1
        entry["docs"].add(d)
        if entry["first"] is None:
            raw = raws[d]
            entry["first"] = (d, raw[window[0][0][0]:window[-1][0][1]].decode("utf-8"))
    repeated = [(e["count"], len(e["docs"]), e["first"]) for key, e in repeats.items()
                if e["count"] >= 2 and not short(key, minimum)]
    spared = [(e["count"], len(e["docs"]), e["first"]) for key, e in repeats.items()
              if e["count"] >= 2 and short(key, minimum)]
    return {"ranges": merged, "left": left, "kept": kept, "counts": counts,
            "repeats": repeated, "short_repeats": spared}
