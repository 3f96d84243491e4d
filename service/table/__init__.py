"""The Hudi table model: properties, timeline, file-system view, storage and on-disk codecs."""
