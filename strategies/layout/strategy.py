"""The layout-optimization choices. Parsed from `hoodie.layout.optimize.*` by the config registry
(`service.config`), the one place Hudi keys are read; re-exported here for the curve code."""

from __future__ import annotations

from service.config.clustering import CurveBuildMethod, LayoutStrategy

__all__ = ["CurveBuildMethod", "LayoutStrategy"]
