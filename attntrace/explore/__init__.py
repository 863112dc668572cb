"""`attntrace explore`: a trace full-screen, on Textual (docs/explore.md).

The only folder that imports Textual, and only when `explore` runs: the command imports
:mod:`attntrace.explore.app` inside its function, so start-up of every other command is
unchanged. Navigation (:mod:`.walk`) is plain Python and tested without a screen; the
widgets draw what the trace holds and compute nothing but the cell pane's story.
"""
