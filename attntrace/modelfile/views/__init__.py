"""The sample models listed (Rich)."""
