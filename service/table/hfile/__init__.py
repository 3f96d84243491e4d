"""HFile (version 3) as Hudi 0.14/0.15 writes it for the metadata table, read in pure Python."""
