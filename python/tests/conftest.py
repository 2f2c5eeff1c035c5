"""Shared pytest setup."""

import signal


def pytest_configure(config):
    """The signals the tests send reach their children at the default disposition.

    A background job of a shell starts with SIGINT and SIGQUIT ignored, ``nohup`` with SIGHUP
    ignored, and an ignored disposition is inherited through ``exec``: a child Python would then
    never raise ``KeyboardInterrupt``, and the tests that interrupt a sort would wait for it. A
    handler is reset to the default at ``exec``, so setting one here is enough.
    """
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        if signal.getsignal(sig) == signal.SIG_IGN:
            handler = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            signal.signal(sig, handler)
