"""The explorer inside a notebook: ``Trace._repr_html_`` and Jupyter's rich display.

A notebook puts a cell's HTML into its own page, where the explorer's script and style
would meet the notebook's (and JupyterLab runs no script it did not trust). So the page
goes in an ``<iframe srcdoc>``: its own document, its script run there, nothing shared,
no file written, no server asked.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attntrace.core.trace import Trace

#: The frame's height on the notebook's page; the reader can drag it taller.
FRAME_HEIGHT = 720


def notebook_html(trace: Trace) -> str:
    """The explorer page of ``trace`` in an iframe, for a notebook's output cell."""
    from attntrace.page.build import trace_page

    page = html.escape(trace_page(trace), quote=True)
    return (
        f'<iframe title="attntrace explorer" srcdoc="{page}" '
        f'style="width: 100%; height: {FRAME_HEIGHT}px; border: 1px solid #d0d7de; '
        'resize: vertical"></iframe>'
    )
