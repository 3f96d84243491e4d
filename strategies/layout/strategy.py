"""The layout-optimization choices (`hoodie.layout.optimize.*`), parsed as Hudi parses them."""

from __future__ import annotations

from enum import StrEnum

from service.errors import ConfigError

LAYOUT_STRATEGY_KEY = "hoodie.layout.optimize.strategy"
CURVE_BUILD_METHOD_KEY = "hoodie.layout.optimize.curve.build.method"
CURVE_SAMPLE_SIZE_KEY = "hoodie.layout.optimize.build.curve.sample.size"
DEFAULT_CURVE_SAMPLE_SIZE = 200_000


class LayoutStrategy(StrEnum):
    """How clustering orders the rows of each output group."""

    LINEAR = "LINEAR"  # lexicographic by the sort columns
    ZORDER = "ZORDER"  # along the Z-order (Morton) curve of the sort columns
    HILBERT = "HILBERT"  # along the Hilbert curve of the sort columns

    @property
    def is_curve(self) -> bool:
        return self is not LayoutStrategy.LINEAR

    @classmethod
    def parse(cls, value: str) -> LayoutStrategy:
        """Case-insensitive, and `z-order` means ZORDER (Hudi's `resolveLayoutOptimizationStrategy`)."""
        text = value.strip()
        if text.lower() == "z-order":
            return cls.ZORDER
        try:
            return cls(text.upper())
        except ValueError:
            allowed = ", ".join(m.value for m in cls)
            raise ConfigError(f"{LAYOUT_STRATEGY_KEY}={value!r} is not one of {allowed}") from None


class CurveBuildMethod(StrEnum):
    """How each sort column becomes a curve coordinate."""

    DIRECT = "DIRECT"  # the value's own order-preserving bits (no pass over the data)
    SAMPLE = "SAMPLE"  # the value's range bucket, from quantiles of a sample (balanced dimensions)

    @classmethod
    def parse(cls, value: str) -> CurveBuildMethod:
        try:
            return cls(value.strip().upper())
        except ValueError:
            allowed = ", ".join(m.value for m in cls)
            raise ConfigError(f"{CURVE_BUILD_METHOD_KEY}={value!r} is not one of {allowed}") from None
