"""Configuration: Hudi keys with Hudi's defaults (`hoodie_keys`, `hoodie`, `props`); daemon settings apart."""
