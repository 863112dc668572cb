"""The real models' catalogue and head ranking as tables (Rich)."""
