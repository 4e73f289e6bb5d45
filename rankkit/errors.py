"""The errors rankkit reports to its users, and the exit code of each (``docs/library.md``)."""

from __future__ import annotations

from os import PathLike


class RankkitError(Exception):
    """Base of the errors rankkit reports to a user.

    Attributes
    ----------
    exit_code
        What the command line exits with (2: bad input or usage; 1: a failure a rerun may fix).
    resumable
        Whether rerunning the same command can succeed, resuming from the cache.
    """

    exit_code: int = 2
    resumable: bool = False


class TaskFormatError(RankkitError, ValueError):
    """Bad input data; ``str(error)`` reads ``FILE:LINE: field 'F': message``.

    ``path`` may name a kind of source (``DataFrame``); ``line`` and ``field_name`` are None when the
    problem is not on one line or in one field.
    """

    def __init__(self, path: str | PathLike[str], line: int | None, field_name: str | None, message: str):
        self.path = str(path)
        self.line = line
        self.field = field_name
        self.message = message
        where = self.path + (f":{line}" if line is not None else "")
        what = f" field {field_name!r}:" if field_name else ""
        super().__init__(f"{where}:{what} {message}")
