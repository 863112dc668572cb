"""check's report and diff's changed cells as a person reads them (Rich)."""
