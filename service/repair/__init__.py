"""`hudi-table-service repair`: what a person used to do by hand, guarded (failed writes rolled back,
orphan files found)."""
