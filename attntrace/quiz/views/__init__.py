"""The quiz's drawing: the stages before the hidden cell, its table with a ``?``, the
hints and the worked answer."""
