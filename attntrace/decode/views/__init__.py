"""decode's step-by-step screens and kv-cache's memory tables (Rich)."""
