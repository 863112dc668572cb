"""``python -m attntrace``: the same as the ``attntrace`` command."""

from attntrace.cli import main

main()
