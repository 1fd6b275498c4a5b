"""Optional parts: what each extra installs, and a clear error when one is missing.

The core install (``pip install neardup``) holds what ``find`` and ``dedup`` import on
their main path: numpy, numba, pyarrow, tqdm. The rest comes in extras:

    text   ftfy, PyStemmer, simplemma, stopwordsiso   --clean web, --stem, --lemmatize,
                                                      --stopwords
    code   pygments                                   --code, --type2
    plots  matplotlib                                 --plots, evaluate --plot
    spark  pyspark, pandas                            --engine spark
    all    every extra above

Remote paths (:mod:`neardup._core.remote`) take one extra per protocol, named in the
error a URL gives without it:

    s3     fsspec, s3fs                               s3://
    gcs    fsspec, gcsfs                              gs://
    hf     fsspec, huggingface_hub                    hf://
    http   fsspec, aiohttp                            http://, https:// (read only)
    remote every protocol above
"""

from __future__ import annotations

import importlib

EXTRAS = {
    "ftfy": "text", "Stemmer": "text", "simplemma": "text", "stopwordsiso": "text",
    "pygments": "code", "matplotlib": "plots", "pyspark": "spark",
}  # fmt: skip


def require(module: str, feature: str):
    """``module`` imported, or an ImportError naming the extra that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = EXTRAS.get(module.split(".")[0], "all")
        raise ImportError(f"{feature} needs {module.split('.')[0]}, which is not installed: "
                          f"pip install 'neardup[{extra}]'") from None
