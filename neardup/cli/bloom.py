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
                          **given_options(options_of(args)))
        print(f"inserted {added['added']:,} documents into the Bloom filters "
              f"({added['set_aside']:,} set aside: too few shingles); "
              f"{added['documents']:,} inserted in all (version {added['version']})")
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
    over = " (over capacity: the false-positive rate has grown past the sized one)" \
        if info["over_capacity"] else ""
    lines = [
        f"Bloom index {info['path']} (format {info['format_version']}, version "
        f"{info['version']}): answers 'probably has a near-duplicate in the index' per new "
        f"document; no pairs, no Jaccard, no matched id",
        f"documents inserted {info['documents']:,} of capacity {info['capacity']:,}{over}; "
        f"{info['set_aside']:,} set aside (too few shingles)",
        f"filters {info['filters']} ({info['bands']} bands + exact copies) x "
        f"{info['bits_per_filter']:,} bits, {info['hashes']} hashes: {info['bits']:,} bits,"
        f" {info['bytes']:,} bytes on disk = {info['bytes_per_document']:,.2f} bytes per "
        f"document at capacity",
        f"filled {info['filled_fraction']:.4f} of the band filters' bits (max "
        f"{info['filled_fraction_max']:.4f}); estimated false-positive rate per query "
        f"{info['fp_estimated']:.3g} (sized for {info['fp_at_capacity']:g} at capacity)",
    ]
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
    return line
