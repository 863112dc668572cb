"""A course's test of the homework (docs/teaching.md): pytest finds the attntrace_grader
fixture through attntrace's plugin, and a failure's message is `attntrace grade`'s report.

    cd docs/examples && python -m pytest test_homework.py
"""

import homework


def test_attention(attntrace_grader):
    attntrace_grader.assert_correct(homework.attention)
