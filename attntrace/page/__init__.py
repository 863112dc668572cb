"""A command's result as one self-contained HTML page: the explorer (``--export FILE.html``).

:mod:`attntrace.page.build` embeds the command's JSON documents (those ``--json`` writes)
in a page with the explorer's own plain JavaScript and CSS (``js/*.js`` and
``explorer.css`` beside this file), so the file opens from ``file://`` with no network;
:mod:`attntrace.page.notebook` puts the page in a notebook. Every number the page shows
is one of the documents', or arithmetic on them the page spells out term by term.
"""
