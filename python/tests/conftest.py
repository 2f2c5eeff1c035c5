"""Shared pytest setup."""

import os
import signal

import pytest


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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A local Ray cluster of 2 CPUs for one test module (its GCS address); skipped without
    Ray. Ray puts the driver's working directory on its workers' sys.path: started from the
    source tree (python/), the workers would import the uncompiled emsort/ there, so the
    cluster starts from a temporary directory."""
    ray = pytest.importorskip("ray")
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("ray-driver"))
    try:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", object_store_memory=200 * 1024 * 1024)
    finally:
        os.chdir(cwd)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
