"""File input and output: files read within limits, model files, trace JSON both ways.

Everything that turns bytes from outside into checked data, or a trace into JSON,
lives here; the core never opens a file. docs/architecture.md has the map.
"""
