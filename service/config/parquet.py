"""`ParquetWriteConfig`: what the product's Parquet writer needs (HoodieStorageConfig keys)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from service.config.hoodie_keys import BLOOM_FPP, PARQUET_COMPRESSION_CODEC
from service.config.reader import KeyReader

CODEC_KEY = PARQUET_COMPRESSION_CODEC
FPP_KEY = BLOOM_FPP

# Parquet codec (Hudi's `CompressionCodecName`) -> pyarrow's `compression=` name. LZO and LZ4_RAW are valid
# for Hudi but pyarrow cannot write them.
PYARROW_CODECS: dict[str, str] = {
    "UNCOMPRESSED": "none",
    "SNAPPY": "snappy",
    "GZIP": "gzip",
    "BROTLI": "brotli",
    "LZ4": "lz4",
    "ZSTD": "zstd",
}


class BloomFilterType(StrEnum):
    """Hudi's `BloomFilterTypeCode`, written to the footer as `hoodie_bloom_filter_type_code`."""

    SIMPLE = "SIMPLE"
    DYNAMIC_V0 = "DYNAMIC_V0"


@dataclass(frozen=True)
class ParquetWriteConfig:
    compression_codec: str  # Parquet's codec name, upper case (GZIP, SNAPPY, ...)
    max_file_size_bytes: int
    block_size_bytes: int  # row group size
    page_size_bytes: int
    compression_ratio: float
    dictionary_enabled: bool
    bloom_filter_type: BloomFilterType
    bloom_num_entries: int
    bloom_fpp: float
    bloom_dynamic_max_entries: int

    @property
    def pyarrow_compression(self) -> str:
        return PYARROW_CODECS[self.compression_codec]

    @classmethod
    def from_reader(cls, r: KeyReader) -> ParquetWriteConfig:
        codec = r.get_str(CODEC_KEY)
        if codec not in PYARROW_CODECS:
            raise r.error(
                CODEC_KEY,
                f"is not supported by the product's Parquet writer (pyarrow); use one of "
                f"{', '.join(name.lower() for name in PYARROW_CODECS)}",
            )
        fpp = r.get_float(FPP_KEY)
        if not 0.0 < fpp < 1.0:
            raise r.error(FPP_KEY, "must be a probability strictly between 0 and 1")
        ratio = r.get_float("hoodie.parquet.compression.ratio")
        if ratio <= 0.0:
            raise r.error("hoodie.parquet.compression.ratio", "must be greater than 0")
        return cls(
            compression_codec=codec,
            max_file_size_bytes=r.get_int("hoodie.parquet.max.file.size"),
            block_size_bytes=r.get_int("hoodie.parquet.block.size"),
            page_size_bytes=r.get_int("hoodie.parquet.page.size"),
            compression_ratio=ratio,
            dictionary_enabled=r.get_bool("hoodie.parquet.dictionary.enabled"),
            bloom_filter_type=BloomFilterType(r.get_str("hoodie.bloom.index.filter.type")),
            bloom_num_entries=r.get_int("hoodie.index.bloom.num_entries"),
            bloom_fpp=fpp,
            bloom_dynamic_max_entries=r.get_int("hoodie.bloom.index.filter.dynamic.max.entries"),
        )
