"""What the tuner races on: an :class:`Instance` (a name and the extra arguments of its line
in an irace instances file), and :func:`read_text`, how every file the tuner reads is read.

Both belong to the tuner rather than to the command line: the Python API (:func:`racer.tune`)
and the command (``racer --scenario``) hand the tuner the same instances, and the parameter
language (:mod:`racer.tuning.parameters`) reads its files with the same rules.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Instance", "read_text"]


def read_text(path: str, error) -> str:
    """The text of the UTF-8 file ``path``; a leading byte-order mark is dropped (editors on
    Windows write one). ``error(line, message)`` makes the exception raised when the file
    cannot be read or is not UTF-8 (``line`` None when no line is to blame).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "f.txt")
    >>> _ = open(path, "wb").write(b"\\xef\\xbb\\xbfa = 1\\n")
    >>> read_text(path, ValueError)
    'a = 1\\n'
    >>> _ = open(path, "wb").write(b"a = 1\\ncaf\\xe9\\n")
    >>> read_text(path, lambda line, message: ValueError(f"line {line}: {message}"))
    Traceback (most recent call last):
    ValueError: line 2: not UTF-8 text: byte 0xe9 at column 4 (save the file as UTF-8)
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        raise error(None, "is a folder, not a file") from None
    except FileNotFoundError:
        raise error(None, "file not found") from None
    except OSError as exc:
        raise error(None, f"cannot read the file: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(line, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column "
                          f"{exc.start - start + 1} (save the file as UTF-8)") from None



@dataclasses.dataclass(frozen=True)
class Instance:
    """One instance: ``name`` (the path or string passed as ``<instance>``) and the extra
    arguments that followed it on its line of the instances file."""

    name: str
    extra: tuple = ()

    def __repr__(self) -> str:
        return f"Instance({self.name!r}{', ' + repr(self.extra) if self.extra else ''})"
