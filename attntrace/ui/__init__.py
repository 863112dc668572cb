"""The shared Rich toolkit every capability's views use.

The display choices (``view``), number formats (``numbers``, ``by_hand``), line breaking
and fitting (``wrap``, ``fitted``, ``split_table``), text made safe (``shown``), a stage
as a table (``titles``, ``stage_table``, ``grid``, ``heatmap``) and the progress display.
Reads what the capabilities computed, never computes attention.
"""
