"""The library's entry points; the CLI is a thin layer over these (``neardup find`` ≡ ``find``)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from . import lsh, sinks
from .pipeline import FindConfig, FindResult, find_texts
from .sources import read_documents, write_deduplicated

SOURCE_OPTIONS = ("fmt", "text_fields", "id_field", "include", "exclude", "delimiter",
                  "encoding")
ENGINES = ("local", "spark")


def find(inputs: str | os.PathLike | Sequence[str | os.PathLike], *, out=None,
         output_format: str = "csv", quiet: bool = True, representative_field: str | None = None,
         engine: str = "local", **options):
    """Read ``inputs``, find near-duplicate pairs and clusters; write them to ``out`` if given.

    ``options`` are source options (fmt, text_fields, id_field, include, exclude,
    delimiter, encoding) and :class:`~neardup.pipeline.FindConfig` fields
    (threshold, num_perm, shingle_kind, shingle_size, ...).
    ``engine="spark"`` runs the same stages on Spark (:func:`neardup.spark.find_sources`)
    and returns a :class:`~neardup.spark.SparkFindResult` (DataFrames).
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine == "spark":
        if representative_field is not None:
            raise ValueError("--representative-field is not supported by the Spark engine")
        from . import spark

        return spark.find_sources(inputs, out=out, output_format=output_format, **options)
    result, _ = _find(inputs, quiet=quiet, representative_field=representative_field,
                      **options)
    if out is not None:
        sinks.write_result(result, out, output_format)
    return result


def dedup(inputs, out, *, quiet: bool = True, representative_field: str | None = None,
          **options) -> FindResult:
    """Write ``inputs`` minus every document that has a near-duplicate kept in its place."""
    result, documents = _find(inputs, quiet=quiet, representative_field=representative_field,
                              **options)
    written = write_deduplicated(documents, result.representative, _as_list(inputs), out)
    result.counts["dedup"] = written
    return result


def tune(threshold: float, num_perm: int = 128, *, bands: int | None = None,
         rows: int | None = None, weights=lsh.DEFAULT_WEIGHTS) -> lsh.BandPlan:
    """The b × r for ``threshold`` and K, with its S-curve (see :mod:`neardup.lsh`)."""
    return lsh.choose_bands(threshold, num_perm, weights=weights, bands=bands, rows=rows)


def _as_list(inputs) -> list[str]:
    if isinstance(inputs, (str, os.PathLike)):
        return [os.fspath(inputs)]
    return [os.fspath(x) for x in inputs]


def _find(inputs, *, quiet, representative_field, **options):
    source_options = {k: options.pop(k) for k in SOURCE_OPTIONS if k in options}
    if representative_field is not None:
        options.setdefault("representative", "field")
    config = FindConfig.from_options(**options)  # checked before any reading
    if config.representative == "field" and representative_field is None:
        raise ValueError("representative='field' needs representative_field")
    documents, report = read_documents(_as_list(inputs), progress=not quiet, **source_options)
    key = None
    if representative_field is not None:
        key = _field_values(documents, representative_field)
    result = find_texts(documents.texts, documents.ids, config, quiet=quiet,
                        representative_key=key)
    result.read_report = report.as_dict()
    return result, documents


def _field_values(documents, name: str) -> np.ndarray:
    if name == "id":
        return np.asarray(documents.ids)
    values = getattr(documents, "fields", {}).get(name)
    if values is None:
        raise ValueError(f"representative field {name!r} was not read; "
                         f"use 'id' or a field named in --field")
    return np.asarray(values)
