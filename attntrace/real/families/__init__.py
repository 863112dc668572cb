"""Any model on disk, by family: what a config (or GGUF metadata) says, as one table of
facts, and one forward pass per kind of network driven by those facts."""
