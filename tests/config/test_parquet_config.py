"""ParquetWriteConfig: codec, sizes and the footer bloom filter settings."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from service.config.hoodie import HoodieConfig
from service.config.parquet import BloomFilterType, ParquetWriteConfig
from service.errors import ConfigError


def parquet(mapping: Mapping[str, object]) -> ParquetWriteConfig:
    return HoodieConfig.from_mapping(mapping, "orders").parquet


@pytest.mark.parametrize(
    ("codec", "name", "pyarrow_name"),
    [
        ("snappy", "SNAPPY", "snappy"),
        ("ZSTD", "ZSTD", "zstd"),
        ("uncompressed", "UNCOMPRESSED", "none"),
        ("lz4", "LZ4", "lz4"),
        ("Brotli", "BROTLI", "brotli"),
    ],
)
def test_parquet_codec_case_insensitive_and_mapped_to_pyarrow(
    codec: str, name: str, pyarrow_name: str
) -> None:
    config = parquet({"hoodie.parquet.compression.codec": codec})
    assert (config.compression_codec, config.pyarrow_compression) == (name, pyarrow_name)


@pytest.mark.parametrize("codec", ["lzo", "LZ4_RAW"])
def test_parquet_codec_hudi_knows_but_pyarrow_cannot_write_rejected(codec: str) -> None:
    with pytest.raises(ConfigError, match="not supported by the product's Parquet writer"):
        parquet({"hoodie.parquet.compression.codec": codec})


def test_parquet_sizes_and_bloom_settings_parsed() -> None:
    config = parquet(
        {
            "hoodie.parquet.max.file.size": "268435456",
            "hoodie.parquet.block.size": 134217728,
            "hoodie.parquet.page.size": "65536",
            "hoodie.bloom.index.filter.type": "simple",
            "hoodie.index.bloom.num_entries": "1000",
            "hoodie.index.bloom.fpp": "0.001",
            "hoodie.bloom.index.filter.dynamic.max.entries": "5000",
        }
    )
    assert (config.max_file_size_bytes, config.block_size_bytes, config.page_size_bytes) == (
        268435456,
        134217728,
        65536,
    )
    assert config.bloom_filter_type is BloomFilterType.SIMPLE
    assert (config.bloom_num_entries, config.bloom_fpp, config.bloom_dynamic_max_entries) == (
        1000,
        0.001,
        5000,
    )


@pytest.mark.parametrize("fpp", ["0", "1", "-0.1"])
def test_parquet_bloom_fpp_must_be_probability(fpp: str) -> None:
    with pytest.raises(ConfigError, match=rf"hoodie\.index\.bloom\.fpp='{fpp}' must be a probability"):
        parquet({"hoodie.index.bloom.fpp": fpp})


def test_parquet_block_size_is_a_java_int() -> None:
    with pytest.raises(ConfigError, match="out of range for a 32-bit integer"):
        parquet({"hoodie.parquet.block.size": str(2**31)})
