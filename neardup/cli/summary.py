"""What a command prints: the summary of a run, the pairs and their counts, the top
clusters, what a document becomes (``--explain``)."""

from __future__ import annotations

import numpy as np

from . import index as cli_index


def format_report(result, top: int = 10, out=None) -> str:
    """The summary a person reads: counts, skips by reason, time per stage, largest clusters."""
    c = result.counts
    lines = []
    read = result.read_report or {}
    if read:
        lines.append(f"read {read.get('records_seen', c['documents']):,} records: "
                     f"{read.get('processed', c['documents']):,} documents")
        for kind in ("skipped", "failed"):
            for reason, count in sorted((read.get(kind) or {}).items()):
                lines.append(f"  {kind}: {count:,} {reason}")
    if "vectors" in c:
        lines += _describe_vectors(c, result)
    else:
        lines += [
            f"documents {c['documents']:,}: {c['shingled']:,} shingled "
            f"({c['shingles']:,} shingles), {c['too_few_shingles']:,} set aside "
            f"(< {result.config.min_shingles} shingles)",
            f"distinct shingle sets {c['distinct_sets']:,} ({c['identical_copies']:,} "
            f"identical copies grouped before LSH)"]
    lines += [
        f"method {c['method']}: {c['method_choice']['reason']}",
        _describe_search(c, result),
        describe_pairs(c, result.config),
        f"clusters {c['clusters']:,} holding {c['documents_in_clusters']:,} documents; "
        f"removable {c['removable']:,}",
    ]
    if c.get("min_member_similarity") is not None:  # clusters "center"
        lines.append(f"  clusters by centre: lowest similarity to the kept document "
                     f"{c['min_member_similarity']:.4f}")
    if c.get("languages"):
        lines.append("code: " + ", ".join(f"{lang} {count:,}"
                                          for lang, count in sorted(c["languages"].items()))
                     + f"; unknown language (word tokens) {c.get('unknown_language', 0):,}")
    for key, what in (("char_fallback", "documents shingled by characters (no spaces)"),
                      ("generated_excluded", "generated files excluded"),
                      ("generated_flagged", "generated files flagged")):
        if c.get(key):
            lines.append(f"  {c[key]:,} {what}")
    buckets = c["buckets"]
    if buckets["buckets_over_limit"]:
        lines.append(f"  {buckets['buckets_over_limit']} LSH buckets over "
                     f"{result.config.max_bucket} documents (largest {buckets['largest_bucket']})"
                     f": policy {result.config.bucket_policy}, "
                     f"{buckets['pairs_avoided']:,} pairs not generated")
    if "index" in c:
        lines.append(cli_index.describe_against(c))
    if "dedup" in c:
        lines += describe_dedup(c["dedup"], None if "index" in c else c.get("explain"))
    lines.append("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in result.seconds.items()))
    if out:
        lines.append(f"written to {out}")
    if "report" in c:
        lines.append(describe_report(c["report"]))
    if top:
        lines += _top_clusters(result, top) if hasattr(result, "labels") and isinstance(
            result.labels, np.ndarray) else _top_clusters_table(result, top)
    return "\n".join(lines)


def _describe_vectors(c: dict, result) -> list[str]:
    """The documents of a run on embeddings: compared, set aside, the vectors by reason."""
    v = c["vectors"]
    lines = [f"documents {c['documents']:,}: {c['shingled']:,} compared, "
             f"{c['documents'] - c['shingled']:,} set aside",
             f"vectors ({v['source']}, {v['dimensions']} dimensions): {v['read']:,} read, "
             f"{v['usable']:,} usable, {v['skipped']:,} skipped"]
    lines += [f"  skipped: {count:,} {reason}"
              for reason, count in sorted(v["skipped_by_reason"].items())]
    return lines


def _describe_search(c: dict, result) -> str:
    """One line on how the candidates were found: LSH, the SimHash search or the join."""
    t = result.config.threshold
    if "vectors" in c:
        v = c["vectors"]
        search = (f"cosine LSH {v['bands']} x {v['rows']} of {v['hyperplanes']} hyperplane "
                  f"bits (P(t) = {result.plan.p_at_threshold:.4f} at cosine t = {t})"
                  if c["method"] == "lsh" else f"all pairs of vectors compared (cosine t = {t})")
        return f"{search}: {c['candidates']:,} candidates, each verified by exact cosine"
    if c["method"] == "lsh" and "containment_search" in c:
        s = c["containment_search"]
        floor = s["lowest_lsh_jaccard_floor"]
        banded = f" (Jaccard floor >= {floor})" if floor is not None else ""
        return (f"LSH by size class: {s['class_pairs_lsh']} class pairs banded{banded}, "
                f"{s['class_pairs_exact']} on the exact join: {c['candidates']:,} "
                f"candidates ({s['lsh_candidates']:,} + {s['exact_pairs']:,})")
    if c["method"] == "lsh":
        return (f"LSH {result.plan.bands} x {result.plan.rows} (steep point "
                f"{result.plan.steep_point:.3f}, t = {t}): {c['candidates']:,} candidates")
    if c["method"] == "simhash":
        s = c["simhash"]
        return (f"SimHash: Hamming distance <= {s['distance']} of 64 bits ({s['blocks']} "
                f"blocks, {s['comparisons']:,} fingerprint comparisons): "
                f"{c['candidates']:,} candidates")
    return f"exact join: {c['candidates']:,} pairs >= {t}, none lost"


def describe_pairs(c: dict, config) -> str:
    """What ``pairs`` counts, in words: document pairs, copies of one text included."""
    measure = "Jaccard" if getattr(config, "measure", "jaccard") == "jaccard" else (
        config.measure)
    which = (f"exact {measure} >= {config.threshold}" if config.verify
             else f"every candidate, any {measure}")
    if getattr(config, "embeddings", None) is not None:
        rule = f"exact cosine >= {config.threshold}"
        if config.also_jaccard is not None:
            rule += (" or " if config.either else " and ") + \
                f"exact Jaccard >= {config.also_jaccard}"
        which = rule if config.verify else "every candidate, any cosine"
    with_index = c.get("index", {}).get("identical_pairs_with_index", 0)
    identical = (f"{c['identical_pairs']:,} of identical sets (J = 1; {with_index:,} of them a "
                 f"new document and an indexed copy)" if with_index else
                 f"{c['identical_pairs']:,} inside identical groups (J = 1)")
    line = (f"pairs {c['pairs']:,} document pairs ({which}): {identical}, "
            f"{c['near_duplicate_pairs']:,} between different sets "
            f"(from {c['set_pairs']:,} pairs of distinct sets)")
    if config.pairs == "groups":
        line += "; written compact (set_pairs + identical)"
    return line


def describe_dedup(written: dict, explain: dict | None = None) -> list[str]:
    """The dedup copy in sentences: records written and documents removed, per input
    where there are several (:func:`neardup.sources.write_deduplicated`'s counts), and
    the explain file."""
    outputs = written.get("outputs", [])
    removed = written["removed"]
    why = ("every document of a cluster of two or more" if written.get("keep") == "none"
           else "near-duplicates of a kept one")
    lines = [f"dedup: {written['written']:,} records written"
             f"{' with neardup_ fields' if written.get('annotated') else ''}, "
             f"{removed:,} document{'s' * (removed != 1)} removed ({why})"]
    for output in outputs if len(outputs) > 1 else []:
        lines.append(f"  {output['input']} -> {output['output']}: {output['written']:,} "
                     f"written, {output['removed']:,} removed")
    not_copied = sum(output.get("not_copied", 0) for output in outputs)
    if not_copied:
        lines.append(f"  {not_copied:,} records left out of the copy (unreadable files, "
                     f"not regular files, ignored)")
    if explain is not None:
        lines.append(f"  {explain['rows']:,} removed records and what each duplicates "
                     f"written to {explain['path']}")
    return lines


def describe_repeats(result, out: str) -> str:
    """What ``neardup repeats`` prints: the run (:meth:`neardup.units.run.UnitResult.describe`)
    and the rows of the listing, where they went."""
    rows = result.repeats.num_rows
    return (f"{result.describe()}\nlisted {rows:,} repeated text{'s' * (rows != 1)} "
            f"(most repeated first) in {out}")


def describe_report(drawn: dict) -> str:
    """One line on what a report drew and cut."""
    chords = f"{drawn['chords']:,} chords"
    if drawn["sampled"]:
        chords += f" (a sample of {drawn['candidates']:,} candidates)"
    line = (f"report {drawn['path']} ({drawn['bytes']:,} bytes): {chords}, "
            f"{drawn['clusters_shown']:,} of {drawn['clusters']:,} clusters, "
            f"{drawn['pair_views']} pair views")
    if drawn.get("plots"):
        line += f"; {len(drawn['plots'])} plot files"
    return line


def format_explain(explained: dict) -> str:
    lines = [f"document {explained['id']} (route {explained['route']}, "
             f"{explained['shingle_kind']} shingles of {explained['shingle_size']}"
             f"{', generated' if explained['generated'] else ''})"]
    for step in explained["steps"]:
        lines.append(f"after {step['step']}: {step['text'][:500]!r}")
    if not explained["steps"]:
        lines.append("no cleaning steps (tokenized as is)")
    lines.append(f"first {len(explained['shingles'])} shingles:")
    lines += [f"  {s!r}" for s in explained["shingles"]]
    return "\n".join(lines)


def _top_clusters(result, top: int) -> list[str]:
    sizes = np.bincount(result.labels, minlength=result.n)
    order = np.lexsort((np.arange(result.n), -sizes))
    largest = order[sizes[order] > 1][:top]
    if largest.size == 0:
        return ["no clusters"]
    lines = [f"largest clusters (of {result.counts['clusters']:,}):"]
    # a line file's ids are line numbers: its lines' texts come along (see pipeline.run)
    previews = getattr(result, "previews", None) or {}
    new_documents = getattr(result, "new_documents", None)  # against an index

    def named(d) -> str:
        preview = previews.get(int(d))
        name = result.ids[d] if preview is None else f"{result.ids[d]}: {preview}"
        return f"{name} [index]" if new_documents is not None and d >= new_documents else name

    for label in largest:
        members = np.flatnonzero(result.labels == label)
        kept = members[result.representative[members]][0]
        others = members[members != kept]
        lines.append(f"  [{members.size}] keep {named(kept)}")
        lines += [f"        {named(m)}" for m in others[:5]]
        if others.size > 5:
            lines.append(f"        ... {others.size - 5} more")
    return lines


def _top_clusters_table(result, top: int) -> list[str]:
    """The largest clusters from a clusters table (the Spark engine's result)."""
    clusters = result.clusters.where(result.clusters.cluster_size > 1).limit(top * 50).collect()
    if not clusters:
        return ["no clusters"]
    lines = [f"largest clusters (of {result.counts['clusters']:,}):"]
    shown = []
    for row in clusters:
        if row["cluster"] not in shown:
            shown.append(row["cluster"])
    for label in shown[:top]:
        members = [r for r in clusters if r["cluster"] == label]
        kept = next(r["id"] for r in members if r["representative"])
        others = [r["id"] for r in members if r["id"] != kept]
        lines.append(f"  [{members[0]['cluster_size']}] keep {kept}")
        lines += [f"        {m}" for m in others[:5]]
        if members[0]["cluster_size"] - 1 > 5:
            lines.append(f"        ... {members[0]['cluster_size'] - 6} more")
    return lines
