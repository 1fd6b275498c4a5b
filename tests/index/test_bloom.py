"""The Bloom index: no false negatives against the full index, false positives within the
stated rate, filters that merge by OR, atomic writes, refusals by name.

Properties checked:
- every new document the full index (same options, same b × r) has a candidate with is
  flagged (the same band keys are inserted: an exact property), and a dedup against the
  Bloom index removes every document a dedup against the full index removes;
- the measured false-positive rate per query is within the sized rate (a binomial bound
  with a 5-sigma margin), and within 5 sigma of the rate estimated from the bits set;
- info's bits, bytes per document and filled fraction are those of the files;
- merge_filters (OR) of filters built apart equals one build over both; an add equals a
  build over both at the same capacity; the same input gives byte-identical files;
- a write killed at any step leaves the previous version, and the next writer sweeps;
- refusals name the option: --fp outside (0, 1), --capacity < 1, --fp without --bloom,
  find --against a Bloom index, compact/remove on one, options that differ;
- an index of layout 1 (written by an earlier neardup: one filter per band, double
  hashing) still finds every document it holds, grows into generations with the new
  probes, and meets the rate its info estimates; past its own rate it says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import neardup
from neardup import synthetic
from neardup.cli import main
from neardup.index import Index, bloom
from neardup.index.bloom import BloomIndex, FilterPlan
from neardup.index.store import CRASH_ENV

WORDS = dict(shingle_kind="word", shingle_size=1)


def corpus(seed: int, n: int = 600, similarity=(0.6, 1.0), dup_fraction=0.3, prefix="d"):
    c = synthetic.planted_corpus(n, doc_words=60, dup_fraction=dup_fraction,
                                 similarity=similarity, vocabulary=5000, exact_copies=15,
                                 seed=seed)
    return [{"id": f"{prefix}{i}", "text": t} for i, t in zip(c.ids, c.texts)]


def split(records, seed):
    order = np.random.default_rng(seed).permutation(len(records))
    cut = len(records) // 2
    return ([records[k] for k in sorted(order[:cut])],
            [records[k] for k in sorted(order[cut:])])


def folder_bytes(path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and p.name != "lock"}


@pytest.mark.parametrize("seed, options", [(0, {}), (1, {"threshold": 0.6}),
                                           (2, {"family": "affine32", "bits": 8})])
def test_every_document_the_full_index_finds_is_flagged(tmp_path, seed, options):
    old, new = split(corpus(seed), seed)
    Index.build(old, tmp_path / "full", id="id", **WORDS, **options)
    index = Index.build(old, tmp_path / "bloom", id="id", bloom=True, **WORDS, **options)
    # every candidate of the full index, verified or not
    candidates = neardup.find(new, against=tmp_path / "full", id="id", verify=False)
    n_new = candidates.counts["new_documents"]
    pairs = candidates.pairs_table().to_pydict()
    with_index = {a for a, b in zip(pairs["doc_a"], pairs["doc_b"]) if b >= n_new}
    assert len(with_index) > 20  # the corpus plants pairs across the split

    result = index.query(new, id="id")
    flagged, exact = result.flagged, result.counts["index"]["flagged_exact"]
    assert set(np.flatnonzero(flagged)) >= with_index
    # the rest are false positives: within the sized rate with a wide margin
    assert len(set(np.flatnonzero(flagged)) - with_index) <= 5 + 10 * bloom.DEFAULT_RATE * n_new
    assert 0 < exact <= flagged.sum()

    # what the full index removes for an indexed document, the Bloom index removes; the
    # documents it keeps hold no verified pair among themselves
    verified = neardup.find(new, against=tmp_path / "full", id="id").pairs_table().to_pydict()
    ids = [r["id"] for r in new]
    for_index = {ids[a] for a, b in zip(verified["doc_a"], verified["doc_b"]) if b >= n_new}
    bloom_kept = {r["id"] for r in neardup.dedup(new, against=tmp_path / "bloom", id="id")}
    assert bloom_kept and not bloom_kept & for_index
    assert not any(ids[a] in bloom_kept and ids[b] in bloom_kept
                   for a, b in zip(verified["doc_a"], verified["doc_b"]) if b < n_new)


def test_dedup_against_a_bloom_index_removes_flagged_documents_and_their_copies(tmp_path):
    old, new = split(corpus(3, similarity=(0.9, 1.0)), 3)
    index = Index.build(old, tmp_path / "bloom", id="id", bloom=True, **WORDS)
    result = index.query(new, id="id")
    flagged, exact = index.flag(result)
    # the rule, by brute force: visited with the run's representatives first, then in
    # input order, a document stays unless it is flagged or has a verified pair with one
    # that stayed before it (a flagged document keeps nothing)
    table = result.pairs_table().to_pydict()
    paired = {frozenset(p) for p in zip(table["doc_a"], table["doc_b"])}
    visit = [*np.flatnonzero(result.representative), *np.flatnonzero(~result.representative)]
    stayed: list[int] = []
    for d in visit:
        if not flagged[d] and not any(frozenset((d, k)) in paired for k in stayed):
            stayed.append(int(d))
    expected = {new[d]["id"] for d in stayed}
    assert len(expected) < result.n - int(flagged.sum())  # some go for a new document
    kept = neardup.dedup(new, against=tmp_path / "bloom", id="id")
    assert {r["id"] for r in kept} == expected

    source = tmp_path / "new.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in new))
    done = neardup.dedup(source, tmp_path / "kept.jsonl", against=tmp_path / "bloom",
                         id_field="id", add=True)
    c = done.counts
    assert c["index"]["flagged"] == int(flagged.sum())
    assert c["index"]["flagged_exact"] == int(exact.sum()) > 0  # exact copies planted
    assert c["removable"] == len(new) - len(expected)
    assert c["index"]["added"]["added"] == len(expected)
    assert BloomIndex(tmp_path / "bloom").n == len(old) + len(expected)
    # what was kept and added is now flagged itself
    kept_records = [json.loads(line) for line in
                    (tmp_path / "kept.jsonl").read_text().splitlines()]
    assert BloomIndex(tmp_path / "bloom").query(kept_records, id="id").flagged.all()


def test_the_false_positive_rate_is_within_its_bound():
    rng = np.random.default_rng(0)
    for rate, capacity, bands in ((1e-2, 20_000, 18), (1e-3, 20_000, 18), (0.05, 5_000, 4)):
        plan = FilterPlan.for_rate(rate, capacity, bands)
        filters = np.zeros((bands, plan.words), dtype=np.uint64)
        bloom.insert(filters, rng.integers(0, 2**63, size=(capacity, bands), dtype=np.uint64)
                     .astype(np.uint64), plan)
        queries = 400_000
        absent = rng.integers(0, 2**63, size=(queries, bands), dtype=np.uint64)
        false = int((bloom.hits(filters, absent, plan) > 0).sum())
        estimate = bloom.estimated_rate(bloom.fill_fraction(filters), plan.hashes)
        assert plan.expected_rate <= rate
        sigma = np.sqrt(queries * rate * (1 - rate))
        assert false <= queries * rate + 5 * sigma
        assert abs(false - queries * estimate) <= 5 * np.sqrt(queries * estimate) + 1


def test_a_corpus_of_unrelated_documents_is_flagged_at_the_sized_rate(tmp_path):
    old = corpus(4, n=3000, dup_fraction=0.0, prefix="old")
    new = corpus(5, n=3000, dup_fraction=0.0, prefix="new")
    Index.build(old, tmp_path / "full", id="id", **WORDS)
    index = Index.build(old, tmp_path / "bloom", id="id", bloom=True, fp=0.05, **WORDS)
    truth = neardup.find(new, against=tmp_path / "full", id="id", verify=False)
    pairs = truth.pairs_table().to_pydict()
    n_new = truth.counts["new_documents"]
    real = {a for a, b in zip(pairs["doc_a"], pairs["doc_b"]) if b >= n_new}
    flagged = set(np.flatnonzero(index.query(new, id="id").flagged))
    false = len(flagged - real)
    queries = n_new - len(real)
    assert false <= queries * 0.05 + 5 * np.sqrt(queries * 0.05)
    assert false >= 1  # at 5 % some are expected: the filters are really that small


def test_info_counts_what_the_files_hold(tmp_path):
    old, _ = split(corpus(6), 6)
    index = Index.build(old, tmp_path / "bloom", id="id", bloom=True, fp=1e-3,
                        capacity=1000, **WORDS)
    info = index.info(verify=True)
    filters = np.load(next((tmp_path / "bloom" / "filters").iterdir()) / "bands-0.npy")
    exact = np.load(next((tmp_path / "bloom" / "filters").iterdir()) / "exact-0.npy")
    ones = np.unpackbits(filters.view(np.uint8)).reshape(info["bands"], -1).sum(axis=1)
    assert info["documents"] == len(old) and info["capacity"] == 1000
    assert info["bits"] == filters.size * 64 + exact.size * 64
    assert info["bytes_per_document"] == round(info["bits"] / 8 / 1000, 2)
    assert info["filled_fraction"] == round(float(ones.mean() / (filters.shape[1] * 64)), 6)
    fill = ones / (filters.shape[1] * 64)
    hashes = info["generations"][0]["hashes"]
    assert info["fp_estimated"] == pytest.approx(1 - np.prod(1 - fill ** hashes))
    assert info["corrupt_files"] == [] and len(info["generations"]) == 1
    assert info["generations"][0]["documents"] == len(old)
    # the default band plan (18 x 6) at 1e-3 (half of it for the first generation):
    # under 64 bytes a document
    assert info["bands"] == 18 and info["bytes_per_document"] <= 64


def test_filters_merge_by_or_and_add_equals_one_build(tmp_path):
    records = corpus(7)
    a, b = records[:300], records[300:]
    sized = dict(id="id", bloom=True, capacity=1000, **WORDS)
    Index.build(records, tmp_path / "both", **sized)
    Index.build(a, tmp_path / "a", **sized)
    Index.build(b, tmp_path / "b", **sized)
    merged = bloom.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "merged")
    assert folder_bytes(tmp_path / "merged") == folder_bytes(tmp_path / "both")
    assert merged.n == len(records)
    one, two = BloomIndex(tmp_path / "a"), BloomIndex(tmp_path / "b")
    first = (one.filters.generations[0], two.filters.generations[0],
             merged.filters.generations[0])
    assert np.array_equal(bloom.merge_filters(first[0].bands, first[1].bands), first[2].bands)
    added = BloomIndex(tmp_path / "a")
    added.add(b, id="id")
    assert np.array_equal(added.filters.generations[0].bands, first[2].bands)
    assert np.array_equal(added.filters.generations[0].exact, first[2].exact)
    # the same input, the same bytes
    Index.build(records, tmp_path / "again", **sized)
    assert folder_bytes(tmp_path / "again") == folder_bytes(tmp_path / "both")
    Index.build(a, tmp_path / "small", id="id", bloom=True, capacity=500, **WORDS)
    with pytest.raises(ValueError, match="differ in bloom"):
        bloom.merge([tmp_path / "a", tmp_path / "small"], tmp_path / "no")
    with pytest.raises(ValueError, match="same shape"):
        bloom.merge_filters(first[0].bands, first[0].bands[:, :-1])


def test_generations_of_a_build_do_not_depend_on_how_it_was_read(tmp_path, monkeypatch):
    # past --capacity a build opens generations as the documents alone say (blocks of
    # BUILD_BLOCK documents), not as the reading's chunks fell: read 77 documents at a
    # time or all at once, the same files (the Spark build plans the same blocks)
    records = corpus(8)
    sized = dict(id="id", bloom=True, capacity=50, fp=1e-5, **WORDS)
    whole = Index.build(records, tmp_path / "whole", **sized)
    monkeypatch.setattr("neardup.index.chunks.CHUNK_DOCUMENTS", 77)
    Index.build(records, tmp_path / "chunked", **sized)
    assert folder_bytes(tmp_path / "chunked") == folder_bytes(tmp_path / "whole")
    first, second = (g["capacity"] for g in whole.info()["generations"])
    assert second == len(records) - first  # as large as what was left to insert
    monkeypatch.setattr(bloom, "BUILD_BLOCK", 500)  # blocks, whatever the chunks
    blocks = Index.build(records, tmp_path / "blocks", **sized).info()["generations"]
    assert [g["capacity"] for g in blocks] == [first, 500 - first, 2 * (500 - first)]


@pytest.mark.parametrize("point", ["bloom-half-written", "bloom-written", "manifest-written"])
def test_an_add_killed_at_any_step_leaves_the_previous_version(tmp_path, point, run_cli):
    records = corpus(8, n=200)
    Index.build(records[:100], tmp_path / "idx", id="id", bloom=True, capacity=400, **WORDS)
    before = BloomIndex(tmp_path / "idx").info()
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps(r) + "\n" for r in records[100:]))
    done = run_cli("index", "add", str(tmp_path / "idx"), str(more), "--id-field", "id",
                   "-q", env={**os.environ, CRASH_ENV: point})
    assert done.returncode == -9, done.stderr
    index = BloomIndex(tmp_path / "idx")
    assert index.info(verify=True)["corrupt_files"] == []
    assert index.info()["version"] == before["version"] and index.n == 100
    added = index.add(more, id_field="id")
    assert added["documents"] == 200 and added["version"] == before["version"] + 1
    listed = BloomIndex(tmp_path / "idx").manifest["filters"]["name"]
    assert [p.name for p in (tmp_path / "idx" / "filters").iterdir()] == [listed]
    assert not list((tmp_path / "idx").glob("manifest.json.tmp*"))


def test_refusals_name_the_option(tmp_path, capsys):
    records = corpus(9, n=100)
    for fp in (0.0, 1.0, -0.1, 2.0):
        with pytest.raises(ValueError, match=r"--fp .* must be in \(0, 1\)"):
            Index.build(records, tmp_path / "x", id="id", bloom=True, fp=fp, **WORDS)
    with pytest.raises(ValueError, match="--capacity"):
        Index.build(records, tmp_path / "x", id="id", bloom=True, capacity=0, **WORDS)
    with pytest.raises(ValueError, match="give --bloom"):
        Index.build(records, tmp_path / "x", id="id", fp=0.01, **WORDS)
    assert not (tmp_path / "x").exists()  # refused before anything was written
    Index.build(records, tmp_path / "bloom", id="id", bloom=True, **WORDS)
    with pytest.raises(ValueError, match="is a Bloom index: .* no pairs"):
        neardup.find(records, against=tmp_path / "bloom", id="id")
    with pytest.raises(ValueError, match="is a Bloom index"):
        Index(tmp_path / "bloom")
    with pytest.raises(ValueError, match=r"shingle_size \(index 1, query 3\)"):
        BloomIndex(tmp_path / "bloom").add(records, id="id", shingle_size=3)
    with pytest.raises(ValueError, match="not on Spark"):
        neardup.dedup(tmp_path / "in.jsonl", tmp_path / "out", against=tmp_path / "bloom",
                      engine="spark")
    capsys.readouterr()
    assert main(["index", "compact", str(tmp_path / "bloom")]) == 2
    assert "does not apply to the Bloom index" in capsys.readouterr().err
    assert main(["index", "build", "x.jsonl", "-o", str(tmp_path / "y"), "--fp", "0.01"]) == 2
    assert "give --bloom" in capsys.readouterr().err
    source = tmp_path / "new.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["find", str(source), "--against", str(tmp_path / "bloom"), "--id-field",
                 "id", "-q"]) == 2
    assert "is a Bloom index" in capsys.readouterr().err


def test_past_capacity_a_new_generation_opens_and_the_rate_holds(tmp_path):
    records = corpus(11, n=600, dup_fraction=0.0)
    index = Index.build(records, tmp_path / "bloom", id="id", bloom=True, fp=0.01,
                        capacity=100, **WORDS)
    info = index.info()
    # capacity 100 at 0.005 (the first generation's half) fits the 4,096-bit floor's
    # capacity; past it the rest goes into a generation twice as large or more
    sizes = [g["capacity"] for g in info["generations"]]
    assert info["documents"] == 600 == sum(g["documents"] for g in info["generations"])
    assert len(sizes) >= 2 and all(b >= 2 * a for a, b in zip(sizes, sizes[1:]))
    assert all(g["documents"] <= g["capacity"] for g in info["generations"])
    assert [g["fp"] for g in info["generations"]] == \
        pytest.approx([0.01 / 2 ** (g + 1) for g in range(len(sizes))])
    assert info["fp_estimated"] <= 0.01
    # the estimate is the rate absent keys meet in these filters, all generations together
    rng = np.random.default_rng(11)
    queries = 100_000
    absent = rng.integers(0, 2**63, size=(queries, index.bands), dtype=np.uint64)
    false = int((index.filters.hits(absent) > 0).sum())
    estimate = info["fp_estimated"]
    assert abs(false - queries * estimate) <= 5 * np.sqrt(queries * estimate * (1 - estimate))


def test_command_line_round_trip(tmp_path, capsys):
    old, new = split(corpus(10, similarity=(0.9, 1.0)), 10)
    files = {}
    for name, part in (("old", old), ("new", new)):
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text("".join(json.dumps(r) + "\n" for r in part))
    idx = str(tmp_path / "idx")
    common = ["--id-field", "id", "-q"]
    assert main(["index", "build", str(files["old"]), "-o", idx, "--shingle", "word", "-k",
                 "1", "--bloom", "--fp", "0.001", "--capacity", "2000", *common]) == 0
    assert "no pairs, no Jaccard" in capsys.readouterr().out
    assert main(["index", "info", idx, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["mode"] == "bloom" and info["documents"] == len(old)
    assert main(["dedup", str(files["new"]), "--against", idx, "--add", "-o",
                 str(tmp_path / "kept.jsonl"), *common]) == 0
    printed = capsys.readouterr().out
    assert "no pairs or Jaccard with indexed documents" in printed
    kept = (tmp_path / "kept.jsonl").read_text().splitlines()
    assert f"inserted {len(kept):,} into the filters" in printed
    assert main(["index", "info", idx]) == 0
    assert f"documents inserted {len(old) + len(kept):,};" in capsys.readouterr().out


# ---- the rate kept at every capacity and through days of adds ----

BANDS = 4  # the rate per query is the filters' sizing; 4 bands keep the big runs small


def add_days(filters: bloom.Generations, rng, sizes) -> None:
    for n in sizes:
        for start in range(0, n, 250_000):  # a chunk of keys at a time, as reads insert
            m = min(250_000, n - start)
            filters.insert(rng.integers(0, 2**64, size=(m, BANDS), dtype=np.uint64),
                           rng.integers(0, 2**64, size=m, dtype=np.uint64))
        yield n


@pytest.mark.parametrize("capacity", [1, 10, 100, 1_000, 10_000, 100_000,
                                      pytest.param(1_000_000, marks=pytest.mark.slow)])
def test_days_of_adds_keep_the_measured_rate_within_fp(capacity):
    fp, queries = 1e-3, 200_000
    rng = np.random.default_rng(capacity)
    filters = bloom.Generations.sized(fp, capacity, BANDS)
    first = filters.generations[0].plan.capacity  # the floor may hold more than asked
    # the build, then days of adds: the smaller indexes grow 30-fold, the largest 4-fold
    days = ([capacity, first, 3 * first, first // 2 + 1, 25 * first] if first < 10**5
            else [capacity, capacity, 2 * capacity])
    for day in add_days(filters, rng, days):
        assert day and all(g.documents <= g.plan.capacity for g in filters.generations)
        absent = rng.integers(0, 2**64, size=(queries, BANDS), dtype=np.uint64)
        false = int((filters.hits(absent) > 0).sum())
        estimate = filters.estimated_rate()
        assert false <= 1.5 * fp * queries  # measured within 1.5 x --fp
        assert estimate <= fp  # the budgets of the generations sum to fp
        # info's estimate is what is measured
        assert abs(false - queries * estimate) <= 5 * np.sqrt(queries * estimate) + 2
    assert filters.documents == sum(days)
    assert len(filters.generations) >= 3  # it grew


def test_small_filters_meet_the_rate_their_bits_say():
    # probes that are far from independent in small filters (double hashing: 14.9 times
    # fill^k at 1,024 bits) were measured here
    rng = np.random.default_rng(2)
    queries = 400_000
    for bits in (1024, 4096, 20480):
        plan = FilterPlan(bands=1, capacity=int(bits / 20.4), rate=1e-3, bits=bits, hashes=14)
        filters = np.zeros((1, bits // 64), dtype=np.uint64)
        bloom.insert(filters, rng.integers(0, 2**63, size=(plan.capacity, 1))
                     .astype(np.uint64), plan)
        false = int((bloom.hits(filters, rng.integers(0, 2**63, size=(queries, 1))
                                .astype(np.uint64), plan) > 0).sum())
        expected = queries * bloom.estimated_rate(bloom.fill_fraction(filters), plan.hashes)
        assert abs(false - expected) <= 5 * np.sqrt(expected) + 2, (bits, false, expected)


def random_documents(path, n, prefix, rng):
    with open(path, "w") as f:
        for i in range(n):
            text = " ".join(f"t{w}" for w in rng.integers(0, 10**7, size=40))
            f.write(json.dumps({"id": f"{prefix}_{i}", "text": text}) + "\n")
    return str(path)


def test_dedup_add_past_capacity_grows_and_keeps_new_documents(tmp_path, capsys):
    # a build of 200 documents (capacity 200), then days of --add far past it: the
    # filters saturated and every new document was flagged and removed, exit 0
    rng = np.random.default_rng(99)
    days = [random_documents(tmp_path / f"day{d}.jsonl", n, f"day{d}", rng)
            for d, n in enumerate((200, 2000, 1000, 4000))]
    idx = str(tmp_path / "BD")
    common = ["--id-field", "id", "-q"]
    fp = 0.05
    assert main(["index", "build", days[0], "--shingle", "word", "-t", "0.8", "--bloom",
                 "--fp", str(fp), "-o", idx, *common]) == 0
    for d in (1, 2):
        assert main(["dedup", days[d], "--against", idx, "--add", "-o",
                     str(tmp_path / f"k{d}.jsonl"), *common]) == 0
    printed = capsys.readouterr().out
    # random documents: no near-duplicates, every flag is false
    assert main(["dedup", days[3], "--against", idx, "-o", str(tmp_path / "k3.jsonl"),
                 *common]) == 0
    kept = len((tmp_path / "k3.jsonl").read_text().splitlines())
    false = 4000 - kept
    assert false <= 1.5 * fp * 4000
    info = BloomIndex(idx).info()
    estimate = info["fp_estimated"]
    assert abs(false - 4000 * estimate) <= 5 * np.sqrt(4000 * estimate) + 2
    assert "new generation(s) of filters opened" in printed
    assert len(info["generations"]) >= 2 and estimate <= fp
    assert all(g["documents"] <= g["capacity"] for g in info["generations"])


def test_an_empty_build_needs_a_capacity(tmp_path):
    # it was sized for one document, full at the first add
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="no documents to size .* give --capacity"):
        Index.build(empty, tmp_path / "empty", id_field="id", bloom=True, **WORDS)
    assert not (tmp_path / "empty").exists()
    index = Index.build(empty, tmp_path / "sized", id_field="id", bloom=True,
                        capacity=5000, **WORDS)
    assert index.n == 0 and index.info()["capacity"] == 5000
    index.add(corpus(12, n=100), id="id")
    assert index.info()["generations"][0]["documents"] == 100


def test_filters_past_memory_are_refused_before_reading(tmp_path, capsys, monkeypatch):
    # sizing is closed-form: no loop, however large the capacity
    for capacity in (10**9, 10**11, 10**15, 10**18):
        plan = FilterPlan.for_rate(1e-3, capacity, 18)
        assert plan.expected_rate <= 1e-3 * (1 + 1e-9) and plan.bits >= capacity * 20
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in corpus(13, n=50)))
    read = []
    monkeypatch.setattr("neardup.index.chunks._chunks", lambda *a: read.append(1) or iter(()))
    assert main(["index", "build", str(source), "--bloom", "--capacity", str(10**11), "-o",
                 str(tmp_path / "big"), "--id-field", "id", "-q"]) == 2
    err = capsys.readouterr().err
    assert "--capacity 100,000,000,000 at --fp 0.001 needs" in err and "GiB" in err
    assert "give a --capacity of at most" in err
    assert not read and not (tmp_path / "big").exists()
    monkeypatch.setattr(bloom, "machine_memory", lambda: 8 << 30)
    with pytest.raises(ValueError, match=r"needs .* bytes .*this machine has 8\.0 GiB"):
        Index.build(source, tmp_path / "big", bloom=True, capacity=10**9)
    assert not read


def test_a_query_against_filters_far_past_their_rate_is_refused(tmp_path):
    records = corpus(14, n=200, dup_fraction=0.0)
    Index.build(records[:100], tmp_path / "bloom", id="id", bloom=True, **WORDS)
    index = BloomIndex(tmp_path / "bloom")

    def saturate(filters, *arrays):  # as filters filled far past their capacity are
        for bands in [g.bands for g in getattr(filters, "generations", [])] or [filters]:
            bands[:] = ~np.uint64(0)
        return 1, 0
    with index.writing():
        index._add_locked(saturate)
    assert index.info()["fp_estimated"] == 1.0
    with pytest.raises(ValueError, match=r"would flag about 1 of new documents .*"
                                         r"1000\.0 times the --fp 0.001.*--force"):
        neardup.dedup(records[100:], against=tmp_path / "bloom", id="id")
    assert neardup.dedup(records[100:], against=tmp_path / "bloom", id="id",
                         force=True) == []


def test_the_command_line_merges_bloom_indexes(tmp_path, capsys):
    records = corpus(16)
    sized = dict(id="id", bloom=True, capacity=1000, **WORDS)
    Index.build(records, tmp_path / "both", **sized)
    Index.build(records[:300], tmp_path / "a", **sized)
    Index.build(records[300:], tmp_path / "b", **sized)
    assert main(["index", "merge", str(tmp_path / "a"), str(tmp_path / "b"), "-o",
                 str(tmp_path / "m"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "merged 2 Bloom indexes" in out and f"documents inserted {len(records)}" in out
    assert folder_bytes(tmp_path / "m") == folder_bytes(tmp_path / "both")
    # past the capacity of a generation the merge is refused, naming the rebuild
    small = dict(id="id", bloom=True, capacity=400, **WORDS)
    Index.build(records[:300], tmp_path / "a4", **small)
    Index.build(records[300:], tmp_path / "b4", **small)
    assert main(["index", "merge", str(tmp_path / "a4"), str(tmp_path / "b4"), "-o",
                 str(tmp_path / "m4")]) == 2
    assert "sized for 400" in capsys.readouterr().err and not (tmp_path / "m4").exists()
    Index.build(records, tmp_path / "full", id="id", **WORDS)
    assert main(["index", "merge", str(tmp_path / "a"), str(tmp_path / "full"), "-o",
                 str(tmp_path / "mixed")]) == 2
    assert "merges only with Bloom indexes" in capsys.readouterr().err


# ---- indexes of layout 1, written by an earlier neardup ----

DATA = Path(__file__).parent / "data"


def legacy_corpus(n=300, first=0, words=30):
    """Documents of 30 words picked by SHA-256 of (document, position): a pure function,
    the input of the layout-1 indexes under data/."""
    def word(i, j):
        return f"w{int(hashlib.sha256(f'{i}-{j}'.encode()).hexdigest()[:8], 16) % 100_000}"
    return [{"id": f"d{i}", "text": " ".join(word(i, j) for j in range(words))}
            for i in range(first, first + n)]


def legacy_index(tmp_path, name):
    """data/NAME, built by neardup 0a9c221 (layout 1) from legacy_corpus() with
    `index build legacy.jsonl --id-field id --shingle word -k 1 --bloom --fp 0.01
    --capacity C -o NAME`: C = 400 (bloom-layout1), C = 60 (bloom-layout1-full)."""
    shutil.copytree(DATA / name, tmp_path / name)
    return tmp_path / name


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_an_index_of_layout_1_finds_its_documents_and_grows_with_new_probes(tmp_path,
                                                                            capsys):
    idx = legacy_index(tmp_path, "bloom-layout1")
    held, added = legacy_corpus(), legacy_corpus(n=1000, first=300)
    index = BloomIndex(idx)
    info = index.info(verify=True)
    assert info["layout"] == 1 and info["corrupt_files"] == [] and info["warnings"] == []
    assert [(g["probes"], g["documents"], g["capacity"], g["takes_documents"])
            for g in info["generations"]] == [("double-hashing", 300, 400, False)]
    # its estimate from its fill, as 0a9c221's `index info` printed it
    assert f"{info['fp_estimated']:.3g}" == "0.000962"
    # read with its own probes: every document it holds is flagged
    assert index.query(held, id="id").flagged.all()

    # an add goes into a new generation with the new probes, at the rate left
    common = ["--id-field", "id", "--shingle", "word", "-k", "1", "-q"]
    assert main(["index", "add", str(idx), write_jsonl(tmp_path / "add.jsonl", added),
                 *common]) == 0
    assert "1 new generation(s) of filters opened" in capsys.readouterr().out
    manifest = json.loads((idx / "manifest.json").read_text())
    assert manifest["bloom"]["layout"] == 2
    assert [(g["probes"], g["documents"]) for g in manifest["bloom"]["generations"]] == \
        [("double-hashing", 300), ("splitmix64", 1000)]
    assert [f["name"] for f in manifest["filters"]["files"]] == \
        ["bands-0.npy", "exact-0.npy", "bands-1.npy", "exact-1.npy"]
    index = BloomIndex(idx)
    info = index.info(verify=True)
    first, grown = info["generations"]
    assert info["corrupt_files"] == [] and info["warnings"] == []
    # generation 0's bits are untouched: the same filters, the same estimate
    written = DATA / "bloom-layout1" / "filters" / "f-000001"
    for name, array in (("bands", index.filters.generations[0].bands),
                        ("exact", index.filters.generations[0].exact)):
        assert np.array_equal(np.load(written / f"{name}.npy"), array)
    assert f"{first['fp_estimated']:.3g}" == "0.000962"
    # what generation 0 leaves of --fp 0.01 is more than the usual half: the usual half
    assert grown["fp"] == pytest.approx(0.01 / 4) and grown["capacity"] == 1000
    assert info["fp_estimated"] <= 0.01
    # no false negatives, old documents or new
    assert index.query(held + added, id="id").flagged.all()
    # the false-flag rate of the grown index is what info estimates from its bits
    rng = np.random.default_rng(17)
    queries = 200_000
    absent = rng.integers(0, 2**64, size=(queries, index.bands), dtype=np.uint64)
    false = int((index.filters.hits(absent) > 0).sum())
    estimate = info["fp_estimated"]
    assert abs(false - queries * estimate) <= 5 * np.sqrt(queries * estimate) + 2
    assert main(["index", "info", str(idx)]) == 0
    assert "(double-hashing probes; written by an earlier neardup" in capsys.readouterr().out


def test_an_index_of_layout_1_past_its_rate_says_so(tmp_path, capsys):
    idx = legacy_index(tmp_path, "bloom-layout1-full")  # 300 documents for a capacity of 60
    held, added = legacy_corpus(), legacy_corpus(n=200, first=300)
    info = BloomIndex(idx).info()
    assert info["fp_estimated"] > 0.9 and len(info["warnings"]) == 1
    assert "holds 300 documents for a capacity of 60" in info["warnings"][0]
    assert main(["index", "info", str(idx)]) == 0
    assert "warning: generation 0 of the Bloom index" in capsys.readouterr().out
    common = ["--id-field", "id", "--shingle", "word", "-k", "1", "-q"]
    assert main(["index", "add", str(idx), write_jsonl(tmp_path / "add.jsonl", added),
                 *common]) == 0
    assert "past the --fp 0.01 it was sized for" in capsys.readouterr().err
    info = BloomIndex(idx).info()
    # nothing left of the rate: the new generation gets the floor, 0.01 / 8, halved
    assert [g["probes"] for g in info["generations"]] == ["double-hashing", "splitmix64"]
    assert info["generations"][1]["fp"] == pytest.approx(0.01 / 16)
    # a query is refused past 2 x --fp, as against any index, and warned with --force
    with pytest.raises(ValueError, match=r"times the --fp 0.01 .*--force"):
        neardup.dedup(held, against=idx, id="id")
    with pytest.warns(UserWarning, match="written by an earlier neardup"):
        assert neardup.dedup(held + added, against=idx, id="id", force=True) == []


def test_a_merge_with_an_index_of_layout_1_names_the_probes(tmp_path, capsys):
    idx = legacy_index(tmp_path, "bloom-layout1")
    Index.build(legacy_corpus(n=100, first=300), tmp_path / "new", id="id", bloom=True,
                fp=0.01, capacity=400, **WORDS)
    assert main(["index", "merge", str(idx), str(tmp_path / "new"), "-o",
                 str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "probe generation 0 differently (double-hashing vs splitmix64" in err
    assert not (tmp_path / "m").exists()
