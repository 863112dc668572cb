"""The one error type for bad input, and how it reads on one line.

Everything a user can get wrong (a file, a field, a token, a flag's value, arithmetic
that overflows) is an :class:`InputError`. The CLI prints ``str(error)`` on stderr and
exits 2; nothing else in the package catches broadly.
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input: where it is (file, field path), what was expected, what was found.

    ``str()`` gives the one line the user sees, e.g.
    ``model.yaml: weights.WK: expected 2 × 2 (d_model × d_k), got 2 × 3``.
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        source: str | None = None,
        field: str | None = None,
        expected: str | None = None,
        found: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.field = field
        self.expected = expected
        self.found = found
        super().__init__(str(self))

    def with_source(self, source: str) -> InputError:
        """Return the same error, located in ``source`` (a file name) if it had none."""
        if self.source is not None:
            return self
        return InputError(
            self.message,
            source=source,
            field=self.field,
            expected=self.expected,
            found=self.found,
        )

    def __str__(self) -> str:
        # A file name with edge spaces is quoted, or the spaces would be invisible.
        source = self.source
        if source is not None and source != source.strip():
            source = repr(source)
        parts = [p for p in (source, self.field) if p]

        detail = self.message or ""
        if self.expected is not None:
            detail = f"{detail + ': ' if detail else ''}expected {self.expected}"
            if self.found is not None:
                detail += f", got {self.found}"
        elif self.found is not None:
            detail = f"{detail + ': ' if detail else ''}got {self.found}"
        return ": ".join([*parts, detail]) if detail else ": ".join(parts)
