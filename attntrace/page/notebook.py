"""The explorer inside a notebook: ``Trace._repr_html_`` and Jupyter's rich display.

A notebook puts a cell's HTML into its own page, where the explorer's script and style
would meet the notebook's (and JupyterLab runs no script it did not trust). So the page
goes in an ``<iframe srcdoc>`` with ``sandbox="allow-scripts"``: its own document with an
origin of its own, so its script runs but cannot reach the notebook's page, cookies or
storage; no file is written, no server asked.

A notebook saves each output in the ``.ipynb``, so a trace shown there keeps a smaller
page than ``--export`` writes (:data:`NOTEBOOK_NUMBERS`, its first heads past it); one
too big for a page even so shows its tables as text, saying why.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from attntrace.errors import InputError

if TYPE_CHECKING:
    from attntrace.kernel.trace import Trace

#: The frame's height on the notebook's page; the reader can drag it taller.
FRAME_HEIGHT = 720
#: Numbers a notebook's page holds at most: about 8 MB saved with the notebook.
NOTEBOOK_NUMBERS = 400_000


def notebook_html(trace: Trace) -> str:
    """The explorer page of ``trace`` in a sandboxed iframe, for a notebook's output."""
    from attntrace.page.build import trace_page

    try:
        page = trace_page(trace, limit=NOTEBOOK_NUMBERS)
    except InputError as error:  # too big even with one head: the tables, as print shows
        return (
            f"<p>attntrace: no explorer for this trace ({html.escape(str(error))}); its "
            f"tables:</p><pre>{html.escape(str(trace))}</pre>"
        )
    return (
        f'<iframe title="attntrace explorer" sandbox="allow-scripts" '
        f'srcdoc="{html.escape(page, quote=True)}" '
        f'style="width: 100%; height: {FRAME_HEIGHT}px; border: 1px solid #d0d7de; '
        'resize: vertical"></iframe>'
    )
