"""`attntrace quiz`: a learner computes a hidden cell of the trace, coached by hints
(docs/teaching.md)."""
