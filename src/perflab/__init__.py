"""perflab: measure the hot paths of runtimes, kernels and system libraries."""

# _signal (built into the interpreter, as sys is; os is loaded by Python's start) and not
# signal, which imports enum: the handler below is in place before perflab loads anything.
import _signal
import os as _os
import sys as _sys

__version__ = "0.1.0"


def _interrupted_at_start(signum: int, frame: object) -> None:
    """Ctrl-C while the command line loads its modules (about half a second): nothing has
    started, so leave at once with one line and the shell's code for SIGINT, no traceback.
    perflab.cli puts Python's own handler back once it has loaded."""
    _os.write(2, b"perflab: interrupted during start-up -- nothing was measured or stored\n")
    _os._exit(130)


# Only when this import is the perflab command starting (its script, or python -m perflab),
# never when a program or a test imports perflab as a library.  An ignored SIGINT is taken
# too: a shell script starts its background jobs (`perflab stat ... &`) with SIGINT ignored,
# and Python keeps it so, which left `kill -INT` (or Ctrl-C after `fg`) without effect until
# the whole run had ended.  perflab.cli then gives it Python's handler: a run stops at once,
# keeping its runs.
if (_os.path.basename(_sys.argv[0] if _sys.argv else "") == "perflab"
        or (_sys.argv and _sys.argv[0] == "-m")) \
        and _signal.getsignal(_signal.SIGINT) in (_signal.default_int_handler, _signal.SIG_IGN):
    _signal.signal(_signal.SIGINT, _interrupted_at_start)
