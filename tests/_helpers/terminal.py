"""A text stream for progress output, a terminal or not as the test says."""

import io


class Stream(io.StringIO):
    """A StringIO whose ``isatty()`` is ``tty``: progress output is a live line on a terminal
    and plain lines elsewhere."""

    def __init__(self, tty):
        super().__init__()
        self._tty = tty

    def isatty(self):
        return self._tty
