"""SeenIds renames exactly as the dict of every id it replaces, across chunks."""

import numpy as np

from neardup.sources.seen_ids import SeenIds, first_uses


def _rename_with_dict(batches):
    """The renaming the builder did with a dict of every id: the reference."""
    uses_of, out = {}, []
    for batch in batches:
        for doc_id in batch:
            uses = uses_of.get(doc_id, 0)
            uses_of[doc_id] = uses + 1
            if uses:
                renamed = doc_id
                while renamed in uses_of:
                    uses += 1
                    renamed = f"{doc_id}#{uses}"
                uses_of[renamed] = 1
                doc_id = renamed
            out.append(doc_id)
    return out


def _rename_with_seen(batches, seal_every):
    seen, out = SeenIds(), []
    for k, batch in enumerate(batches):
        new = first_uses(batch)
        if len(new) == len(batch) and not seen.any_given(new):
            seen.add_new(new)
            out.extend(batch)
        else:
            for doc_id in batch:
                uses = seen.uses(doc_id)
                seen.give(doc_id, uses + 1)
                if uses:
                    renamed = doc_id
                    while renamed in seen:
                        uses += 1
                        renamed = f"{doc_id}#{uses}"
                    seen.give(renamed, 1)
                    doc_id = renamed
                out.append(doc_id)
        if k % seal_every == seal_every - 1:
            seen.seal()
    return out, seen


def test_renames_equal_the_dict_across_seals():
    rng = np.random.default_rng(7)
    # few distinct ids, some already of the form "x#2", one with a lone surrogate
    pool = [f"d{k}" for k in range(300)] + ["d1#2", "d1#3", "d5#2#2", "é", "\ud800x", ""]
    batches = [[pool[i] for i in rng.integers(0, len(pool), size=int(rng.integers(1, 40)))]
               for _ in range(200)]
    expected = _rename_with_dict(batches)
    for seal_every in (1, 3, 50, 1000):
        got, seen = _rename_with_seen(batches, seal_every)
        assert got == expected
        assert len(seen) == len(set(expected))  # every final id once


def test_distinct_ids_stay_as_given_and_are_all_found():
    ids = [f"doc-{k:06d}" for k in range(20_000)]
    seen = SeenIds()
    for lo in range(0, len(ids), 1_000):
        block = first_uses(ids[lo:lo + 1_000])
        assert not seen.any_given(block)
        seen.add_new(block)
        seen.seal()
    assert len(seen.runs) == 1 and np.all(np.diff(seen.runs[0][0]) >= 0)  # one sorted run
    assert all(doc_id in seen and seen.uses(doc_id) == 1 for doc_id in ids[::97])
    assert "doc-020000" not in seen and seen.uses("doc-") == 0
    assert seen.any_given(first_uses(["new", ids[12_345]]))
    assert not seen.any_given(first_uses(["new", "doc-1"]))
