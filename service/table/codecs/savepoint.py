"""`T.savepoint`: HoodieSavepointMetadata. The cleaner must keep every file named here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from service.table.codecs.avro_file import AvroModel, AvroRootModel, Int32, Int64


class SavepointPartitionMetadata(AvroModel):
    """HoodieSavepointPartitionMetadata: file names (not paths) of the savepointed slices."""

    partition_path: str
    savepoint_data_file: tuple[str, ...]


class SavepointMetadata(AvroRootModel):
    """HoodieSavepointMetadata."""

    AVRO_NAME: ClassVar[str] = "HoodieSavepointMetadata"

    savepointed_by: str
    savepointed_at: Int64  # epoch milliseconds
    comments: str
    partition_metadata: Mapping[str, SavepointPartitionMetadata]
    version: Int32 | None = 1
