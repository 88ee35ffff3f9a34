"""``python -m racer`` is the ``racer`` command, as ``python -m pip`` is pip.

It runs :func:`racer.cli.main` with the same arguments and exit code as the console script, for
an interpreter whose scripts folder is not on ``PATH`` (a virtual environment that is not
activated, ``py -m racer`` on Windows). The differential-evolution demo that used to answer
here is ``examples/differential-evolution/race_de.py``.
"""

import sys

from racer.cli import main

if __name__ == "__main__":
    sys.exit(main())
