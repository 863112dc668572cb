"""Human output: Rich tables, the heatmap and step mode. Reads a Trace, never computes."""
