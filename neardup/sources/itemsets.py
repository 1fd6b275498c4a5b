"""Records that already are sets: users and the movies they rated, baskets, tag lists.

Two readers, both returning ``(ShingleSets, ids)`` for :func:`neardup.pipeline.find_sets`:

- :func:`read_item_pairs`: a two-column table (CSV, TSV or Parquet), one row per
  (user, item); each user's set is the items on its rows. ``transpose=True`` swaps the
  roles: each item's set is its users ("movies with nearly the same audience").
- :func:`read_item_lists`: JSON Lines whose field holds each record's list of items.

Items are not hashed: every distinct item gets an integer code (``np.unique``), so two
sets' Jaccard computed on codes is their Jaccard over items, exactly, with no hash
collisions. Grouping is vectorized: the owners are factorized with ``np.unique(...,
return_inverse=True)``, rows sorted by owner, CSR offsets from ``np.bincount``; duplicate
rows count once. Owner ids come out in sorted order (string order).
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..shingling import ShingleSets, compact_segments, sort_unique_segments


def sets_from_pairs(owners: np.ndarray, items: np.ndarray) -> tuple[ShingleSets, list[str]]:
    """Group (owner, item) rows into one set of item codes per owner (owners sorted)."""
    owner_ids, owner_of = np.unique(owners, return_inverse=True)
    _, item_code = np.unique(items, return_inverse=True)
    order = np.argsort(owner_of, kind="stable")
    counts = np.bincount(owner_of, minlength=owner_ids.size)
    raw_offsets = np.zeros(owner_ids.size + 1, dtype=np.int64)
    np.cumsum(counts, out=raw_offsets[1:])
    raw = item_code[order].astype(np.uint32)
    unique_counts = sort_unique_segments(raw, raw_offsets)  # sorts each owner's items
    offsets = np.zeros(owner_ids.size + 1, dtype=np.int64)
    np.cumsum(unique_counts, out=offsets[1:])
    values = np.empty(int(offsets[-1]), dtype=np.uint32)
    compact_segments(raw, raw_offsets, offsets, values)
    return ShingleSets(offsets, values), [str(x) for x in owner_ids]


def read_item_pairs(path: str | os.PathLike, *, user_col: str, item_col: str,
                    delimiter: str | None = None, transpose: bool = False):
    """Sets from a two-column table: ``user_col`` owns the items in ``item_col``.

    CSV/TSV (delimiter from the suffix unless given) or Parquet; values are read as
    strings. Rows with a missing user or item are dropped. Returns (sets, ids, report).
    """
    import pyarrow as pa

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    from .parquet import FORMAT as PARQUET
    from .registry import guess_format

    spec = guess_format(path)
    if spec is PARQUET:
        import pyarrow.parquet as pq

        table = pq.read_table(path)
    else:
        from pyarrow import csv

        sep = delimiter or spec.delimiter or ","
        table = csv.read_csv(path, parse_options=csv.ParseOptions(delimiter=sep),
                             convert_options=csv.ConvertOptions(
                                 column_types={user_col: pa.string(), item_col: pa.string()}))
    for name in (user_col, item_col):
        if name not in table.column_names:
            raise ValueError(f"column {name!r} not in {path} (columns: {table.column_names})")
    users = table.column(user_col).cast(pa.string())
    items = table.column(item_col).cast(pa.string())
    valid = np.logical_and(users.is_valid().to_numpy(zero_copy_only=False),
                           items.is_valid().to_numpy(zero_copy_only=False))
    users = users.to_numpy(zero_copy_only=False)[valid]
    items = items.to_numpy(zero_copy_only=False)[valid]
    if transpose:
        users, items = items, users
    sets, ids = sets_from_pairs(users, items)
    report = {"records_seen": int(table.num_rows), "processed": int(valid.sum()),
              "skipped": {"missing user or item": int((~valid).sum())} if not valid.all()
              else {}, "sets": len(ids)}
    return sets, ids, report


def read_item_lists(path: str | os.PathLike, *, items_field: str,
                    id_field: str | None = None):
    """Sets from JSON Lines: each record's ``items_field`` (a list) is its set.

    The id is ``id_field``'s value or the line number. Records without a list there are
    skipped and counted. Returns (sets, ids, report).
    """
    owners, items, ids = [], [], []
    seen = skipped = 0
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            seen += 1
            record = json.loads(line)
            values = record.get(items_field) if isinstance(record, dict) else None
            if not isinstance(values, list):
                skipped += 1
                continue
            doc = len(ids)
            ids.append(str(record.get(id_field, number)) if id_field else str(number))
            owners.append(np.full(len(values), doc, dtype=np.int64))
            items.extend(json.dumps(v) if not isinstance(v, str) else v for v in values)
    owner_of = np.concatenate(owners) if owners else np.empty(0, dtype=np.int64)
    sets, _ = sets_from_pairs(owner_of, np.asarray(items, dtype=object))
    # owners are 0..n-1 already; records with an empty list own nothing: give them a slot
    sizes = np.zeros(len(ids), dtype=np.int64)
    present = np.unique(owner_of)
    sizes[present] = sets.sizes
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    report = {"records_seen": seen, "processed": len(ids),
              "skipped": {f"no list in {items_field!r}": skipped} if skipped else {},
              "sets": len(ids)}
    return ShingleSets(offsets, sets.values), ids, report
