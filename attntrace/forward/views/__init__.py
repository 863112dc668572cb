"""The forward trace as a person sees it: the tables, step mode, the map, --focus (Rich)."""
