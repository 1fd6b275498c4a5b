"""``neardup index add|info IDX`` on a Bloom index (:mod:`neardup.index.bloom`), and the
line of a dedup summary against one. A Bloom index answers "this new document probably
has a near-duplicate in the index": no pairs, no Jaccard, no matched id."""

from __future__ import annotations

import json

from .index import banding_lines


def run(args, options_of, given_options) -> None:
    from ..index.bloom import BloomIndex

    command = args.index_command
    index = BloomIndex(args.index_path)
    if command == "add":
        added = index.add(tuple(args.sources), quiet=args.quiet,
                          memory_limit=args.memory_limit, work_dir=args.work_dir,
                          **given_options(options_of(args)))
        grown = (f"; {added['new_generations']} new generation(s) of filters opened past "
                 f"the capacity, {added['generations']} in all"
                 if added["new_generations"] else "")
        print(f"inserted {added['added']:,} documents into the Bloom filters "
              f"({added['set_aside']:,} set aside: too few shingles); "
              f"{added['documents']:,} inserted in all (version {added['version']}){grown}")
    elif command == "info":
        info = index.info(verify=args.verify)
        print(json.dumps(info, indent=2) if args.json else format_info(info))
        if args.verify and info["corrupt_files"]:
            raise ValueError(f"index corrupt: {', '.join(info['corrupt_files'])} differ "
                             f"from the manifest")
    else:
        raise ValueError(f"index {command} does not apply to the Bloom index "
                         f"{args.index_path}: it holds one Bloom filter per band and no "
                         f"documents (nothing to compact, and a filter cannot forget a "
                         f"key); build a full index for that")


def format_info(info: dict) -> str:
    generations = info["generations"]
    lines = [
        f"Bloom index {info['path']} (format {info['format_version']}, version "
        f"{info['version']}): answers 'probably has a near-duplicate in the index' per new "
        f"document; no pairs, no Jaccard, no matched id",
        f"documents inserted {info['documents']:,}; {info['set_aside']:,} set aside (too few "
        f"shingles); filters in {len(generations)} generation(s) for {info['capacity']:,} "
        f"documents (a new one, twice as large, opens when "
        + ("they are full)" if generations[-1]["takes_documents"] else
           "documents are added: the last is of an earlier neardup)"),
    ]
    for g, gen in enumerate(generations):
        closed = ("" if gen["takes_documents"] else
                  "; written by an earlier neardup, it takes no new documents")
        lines.append(
            f"  generation {g}: {gen['documents']:,} of {gen['capacity']:,} documents, "
            f"{info['bands'] + 1} filters x {gen['bits']:,} bits, {gen['hashes']} hashes "
            f"({gen['probes']} probes{closed}), filled {gen['filled_fraction']:.4f}, "
            f"false-positive rate {gen['fp_estimated']:.3g} (sized for {gen['fp']:.3g} "
            f"when full)")
    per_inserted = info["bytes_per_inserted_document"]
    lines += [
        f"bytes {info['bytes']:,} on disk = {info['bytes_per_document']:,.2f} per document "
        f"when full" + (f", {per_inserted:,.2f} per inserted document" if per_inserted else ""),
        f"estimated false-positive rate per query {info['fp_estimated']:.3g} (from the bits "
        f"set; --fp {info['fp']:g}, kept however many documents are added)",
    ]
    lines += [f"warning: {line}" for line in info["warnings"]]
    return "\n".join(lines + banding_lines(info))


def describe_against(c: dict) -> str:
    """The line of a dedup summary against a Bloom index."""
    i = c["index"]
    line = (f"against Bloom index {i['path']} ({i['documents']:,} documents inserted; "
            f"estimated false-positive rate {i['fp_estimated']:.3g} per document): "
            f"{i['flagged']:,} of {c['new_documents']:,} new documents flagged as probably "
            f"having a near-duplicate in the index ({i['flagged_exact']:,} of them probably "
            f"exact copies), {i['removed_for_new']:,} more removed for a kept new document "
            f"at J ≥ t; no pairs or Jaccard with indexed documents")
    if "added" in i:
        line += f"; inserted {i['added']['added']:,} into the filters"
        if i["added"]["new_generations"]:
            line += (f" (past their capacity: {i['added']['new_generations']} new "
                     f"generation(s) of filters opened, the rate kept within --fp)")
    return line
