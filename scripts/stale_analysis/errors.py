"""One-line errors for the analysis command lines (the project's rule for bad input: one line
naming the file/key/value and what is valid, exit code 2, no traceback)."""
from __future__ import annotations

import os
import sys


class AnalysisError(Exception):
    """Bad input to an analysis script: unknown key, missing file, malformed filter."""


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def run_cli(main, argv=None) -> int:
    """Runs main(argv); an AnalysisError (or a missing/unreadable file) becomes one line on
    stderr and exit code 2. An int main returns is the exit code (None: 0)."""
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "stale-analysis"
    try:
        rc = main(argv)
    except AnalysisError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        print(f"{prog}: error: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        return 2
    except OSError as e:  # h5py raises OSError for files that are not HDF5
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    return rc if isinstance(rc, int) else 0
