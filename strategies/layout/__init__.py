"""Layout optimization for clustering: LINEAR, ZORDER and HILBERT orderings, numpy/pyarrow only.

Runs in Spark's Python workers (on Arrow record batches) and in the driver (sampling).
"""

from __future__ import annotations

from service.config.clustering import CurveBuildMethod, LayoutStrategy
from strategies.layout.curve import curve_key_width, curve_key_words, curve_sort_key, sort_indices
from strategies.layout.rank import NULL_RANK, RankKeys, column_rank_keys
from strategies.layout.sample import (
    Bounds,
    DimensionBounds,
    bucket_ids,
    build_sample_bounds,
    default_num_buckets,
)

__all__ = [
    "NULL_RANK",
    "Bounds",
    "CurveBuildMethod",
    "DimensionBounds",
    "LayoutStrategy",
    "RankKeys",
    "bucket_ids",
    "build_sample_bounds",
    "column_rank_keys",
    "curve_key_width",
    "curve_key_words",
    "curve_sort_key",
    "default_num_buckets",
    "sort_indices",
]
