"""Finding a sort column in a batch, with an error that names the column and what is there."""

from __future__ import annotations

import pyarrow as pa

from service.errors import ConfigError
from strategies.layout.rank import SORT_COLUMNS_KEY


def column_of(data: pa.RecordBatch | pa.Table, name: str) -> pa.Array | pa.ChunkedArray:
    index = data.schema.get_field_index(name)
    if index < 0:
        available = ", ".join(data.schema.names)
        raise ConfigError(
            f"{SORT_COLUMNS_KEY}: column {name!r} is not in the data, or not unique (columns: {available})"
        )
    return data.column(index)
