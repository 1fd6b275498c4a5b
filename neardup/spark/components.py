"""Connected components on Spark: a DataFrame of edges → (node, label), the label the
smallest node of the component, as :mod:`neardup.cluster`'s union-find labels them
locally. The algorithm (large-star / small-star) is :func:`connected_components`'s.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..cluster import cluster_labels
from .session import _require_spark

try:  # pyspark is an optional dependency (extra "spark")
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F
except ImportError:  # pragma: no cover - exercised only without pyspark
    DataFrame = F = None


# up to this many distinct edges, one task labels them with the local union-find (16
# bytes an edge, 0.8 GB at the limit) instead of rounds of joins over the cluster
LOCAL_EDGES = 50_000_000


def connected_components(edges: DataFrame, src: str = "src", dst: str = "dst",
                         max_rounds: int = 100, local_edges: int = LOCAL_EDGES) -> DataFrame:
    """(node, label) for every node on an edge: label = the smallest node in its component.

    Up to ``local_edges`` distinct edges (near-duplicate pairs are usually far fewer than
    documents), one executor task runs :func:`neardup.cluster.cluster_labels`, the local
    engine's union-find, on all of them: one shuffle instead of O(log² n) rounds of
    several. Above, the graph stays spread over the cluster: the algorithm alternates
    large-star and small-star (Kiveris et al., "Connected Components in
    MapReduce and Beyond", SoCC 2014) until the graph is a forest of stars, each
    centred on the smallest node of its component: the fixed point of both
    operations, reached in O(log² n) rounds (a round is a few joins and
    aggregations). Nodes on no edge are not listed (each is its own component).
    """
    _require_spark()
    current = (edges.select(F.col(src).cast("long").alias("u"), F.col(dst).cast("long")
                            .alias("v"))
               .where(F.col("u") != F.col("v"))
               .select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v"))
               .distinct().localCheckpoint(eager=True))
    if current.count() <= local_edges:
        return current.coalesce(1).mapInArrow(_union_find, "node long, label long")
    rounds = 0
    while not _is_star_forest(current):
        if rounds == max_rounds:
            raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")
        # the checkpoint cuts the lineage, which would otherwise grow with every round
        current = _small_star(_large_star(current)).localCheckpoint(eager=False)
        rounds += 1
    nodes = current.select(F.col("u").alias("node"), F.col("v").alias("label"))
    centres = current.select(F.col("v").alias("node"), F.col("v").alias("label"))
    return nodes.union(centres).distinct()


def _is_star_forest(edges: DataFrame) -> bool:
    """True when every edge (u, v), u > v, is a leaf u's only edge to a centre v.

    Then each component is one star whose centre is its smallest node, and
    neither large-star nor small-star would change anything.
    """
    ends = edges.select("u", F.lit(1).alias("leaf")).union(
        edges.select(F.col("v").alias("u"), F.lit(0).alias("leaf")))
    per_node = ends.groupBy("u").agg(F.sum("leaf").alias("out"),
                                     F.min("leaf").alias("leaf_only"))
    # a node with two edges up, or both a leaf and a centre, is not yet in a star
    return per_node.where((F.col("out") > 1) | ((F.col("out") >= 1)
                                                 & (F.col("leaf_only") == 0))).isEmpty()


def _large_star(edges: DataFrame) -> DataFrame:
    """Link every strictly larger neighbour of u to the smallest of u's neighbourhood."""
    both = edges.union(edges.select(F.col("v").alias("u"), F.col("u").alias("v")))
    smallest = both.groupBy("u").agg(F.min("v").alias("m"))
    smallest = smallest.select("u", F.least("u", "m").alias("m"))
    out = both.join(smallest, "u").where(F.col("v") > F.col("u"))
    return out.select(F.col("v").alias("u"), F.col("m").alias("v")).distinct()


def _small_star(edges: DataFrame) -> DataFrame:
    """Link u and its smaller neighbours to the smallest of them."""
    oriented = edges.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v"))
    smallest = oriented.groupBy("u").agg(F.min("v").alias("m"))
    out = oriented.join(smallest, "u").select(
        F.when(F.col("v") == F.col("m"), F.col("u")).otherwise(F.col("v")).alias("u"),
        F.col("m").alias("v"))
    return out.distinct()


def _union_find(batches):
    """mapInArrow body over every edge (u, v) in one partition: (node, label) by the local
    union-find, nodes numbered densely in their order, so each label is still the
    smallest node of its component."""
    us, vs = [], []
    for batch in batches:
        us.append(batch.column("u").to_numpy())
        vs.append(batch.column("v").to_numpy())
    if not us or not sum(u.size for u in us):
        return
    u, v = np.concatenate(us), np.concatenate(vs)
    nodes, dense = np.unique(np.concatenate([u, v]), return_inverse=True)
    labels = cluster_labels(nodes.size, dense[:u.size], dense[u.size:])
    yield pa.RecordBatch.from_arrays([pa.array(nodes), pa.array(nodes[labels])],
                                     names=["node", "label"])


def task_edges(batches, node_kind: int):
    """One task's rows of edges and nodes (columns a, b, jaccard, kind; a node row has
    ``kind == node_kind``, its document in a and a value in b): (a, b, kind, jaccard,
    nodes, values) with the nodes' documents ascending and their values in that order;
    None when the task has no rows."""
    table = pa.Table.from_batches(list(batches))
    if not table.num_rows:
        return None
    a, b = table.column("a").to_numpy(), table.column("b").to_numpy()
    kind = table.column("kind").to_numpy()
    jaccard = table.column("jaccard").to_numpy(zero_copy_only=False)
    node = kind == node_kind
    order = np.argsort(a[node], kind="stable")
    return a, b, kind, jaccard, a[node][order], b[node][order]
