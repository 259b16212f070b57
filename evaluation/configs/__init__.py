"""The bundled TOML settings, one file per figure row or table, read by name
(`runs.registry.load_config`); a package so that `pip install` ships them."""
