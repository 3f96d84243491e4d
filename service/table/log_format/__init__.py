"""Hudi log files: block framing and contents (`reader`, `blocks`, `content`), and the merged read of a
file slice (`merge`), following Java's `HoodieLogFileReader` and `HoodieMergedLogRecordScanner`."""
