"""Hudi's metadata table (`.hoodie/metadata`) of a table version 6 table: read side of `files`."""
