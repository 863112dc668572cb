"""The trace as one self-contained HTML page: the explorer (``--export trace.html``).

:mod:`attntrace.page.build` embeds a trace document (the JSON ``--json`` writes) in a page
with the explorer's own small JavaScript and CSS (``explorer.js``, ``explorer.css`` beside
this file), so the file opens from ``file://`` with no network. Every number the page
shows is one of the document's, or arithmetic on them the page spells out term by term.
"""
