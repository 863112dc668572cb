"""The pytest plugin (entry point ``pytest11``): the ``attntrace_grader`` fixture, so a
teacher's test asserts a student's function correct with grade's verdict as the message.

Loaded by every pytest run where attntrace is installed: it imports nothing heavy until
the fixture is used."""

from __future__ import annotations
