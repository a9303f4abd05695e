"""tuner/session.py: SIGTERM unwinds the run like Ctrl-C, wherever it lands."""

from __future__ import annotations

import gc
import os
import signal
import time

import pytest

from pmem_advisor.tuner.session import _SigTerm, sigterm_as_interrupt


class _KilledInFinalizer:
    """An object whose finalizer is where the signal arrives (as SQLAlchemy's gc callbacks
    were in CI: the handler's exception was printed as 'Exception ignored' and lost)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        os.kill(os.getpid(), self.signum)
        for _ in range(1000):  # the handler runs here, inside the finalizer
            pass


def _drop_in_finalizer(signum: int) -> None:
    obj = _KilledInFinalizer(signum)
    del obj
    gc.collect()


def _ordinary_code_for(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)


def test_sigterm_raised_inside_a_finalizer_still_ends_the_run():
    with pytest.raises(_SigTerm), sigterm_as_interrupt():
        _drop_in_finalizer(signal.SIGTERM)
        _ordinary_code_for(5.0)  # the signal comes again here, in ordinary code
        pytest.fail("the SIGTERM swallowed by a finalizer was lost")


def test_ctrl_c_inside_a_finalizer_still_ends_the_run():
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        _drop_in_finalizer(signal.SIGINT)
        _ordinary_code_for(5.0)
        pytest.fail("the Ctrl-C swallowed by a finalizer was lost")


def test_handlers_and_hook_are_restored_after_the_run():
    import sys

    before = (signal.getsignal(signal.SIGTERM), sys.unraisablehook)
    with sigterm_as_interrupt():
        assert signal.getsignal(signal.SIGTERM) is not before[0]
    assert (signal.getsignal(signal.SIGTERM), sys.unraisablehook) == before
