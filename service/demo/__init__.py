"""The demo: a table written by Hudi's own Spark writer, then served by the table service."""
