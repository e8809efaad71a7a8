"""Errors that point the user at the exact place their input went wrong."""

from __future__ import annotations

from pathlib import Path


class SentkitError(Exception):
    """Bad user input (a file, a name, an option): `sentkit` prints the message as one line and exits 2."""


class DataFormatError(SentkitError, ValueError):
    """Malformed input: names the file, the 1-based line and the expected form in one line."""

    def __init__(self, path: str | Path, line: int | None, expected: str) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {expected}")
        self.path = str(path)
        self.line = line
        self.expected = expected

    def __reduce__(self):  # rebuilt from its fields when it crosses a process boundary (Ray workers)
        return type(self), (self.path, self.line, self.expected)


class MissingDataError(SentkitError, FileNotFoundError):
    """A benchmark file is absent: says where it was looked for and how to point sentkit at it."""

    def __init__(self, path: str | Path, hint: str = "") -> None:
        msg = f"{path}: file not found"
        msg += f" ({hint})" if hint else " (set SENTKIT_DATA to the folder holding the benchmark data)"
        super().__init__(msg)
        self.path = str(path)
        self.hint = hint

    def __reduce__(self):
        return type(self), (self.path, self.hint)


class LanguageNotCovered(SentkitError, ValueError):
    """A task was asked for languages it has no data for (evaluation skips it and says why)."""


class UnknownName(SentkitError, KeyError):
    """A registry lookup (task, suite, encoder, objective) failed; the message lists close matches."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class ConfigError(SentkitError, ValueError):
    """A training option or run directory that cannot be used as given: one line naming the file, line or
    flag and what was expected (`run.yaml:3: batch_size: expected a positive integer, got 'abc'`)."""


class InvalidArgument(SentkitError, ValueError):
    """An option value that cannot work (`batch_size must be a positive integer, got -1`)."""


class OutputPathError(SentkitError, OSError):
    """An output location that cannot be written (a directory where a file goes, a path under a file)."""


class DataWarning(UserWarning):
    """Input that is valid but may not measure what the user expects (repeated bitext lines): `sentkit`
    prints it as one `sentkit: warning:` line; the results file records it too."""


class TrainingDiverged(SentkitError, ArithmeticError):
    """A training loss term, gradient norm, weight or evaluation score became NaN or Infinity: the run
    stops at that step (the last complete checkpoint stays for a resume with a lower learning rate)."""


class UnsupportedModel(SentkitError, ValueError):
    """A model with a sentence-transformers module sentkit cannot reproduce exactly (a custom class, CNN,
    LSTM, an unknown pooling mode or activation): refused, since leaving it out gives wrong vectors."""


class NonFiniteVectors(SentkitError, ValueError):
    """An encoder returned NaN or Infinity (NaN weights, an overflow): nothing is written from them."""


class ExportCheckFailed(SentkitError, ValueError):
    """An exported or quantized graph whose vectors drift from the fp32 encoder's on real sentences (mean
    cosine below the bar): the export is refused and nothing is written."""
