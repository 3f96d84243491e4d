"""The `run` command: load the config, run the daemon until SIGTERM/SIGINT, reload on SIGHUP."""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path
from types import FrameType

from service.config.daemon import load_daemon_config
from service.daemon.scheduler import Daemon

log = logging.getLogger(__name__)


def run_daemon(config_path: str | Path, stop: threading.Event | None = None, hard_exit: bool = True) -> int:
    """Load the config, run until SIGTERM/SIGINT (or `stop` is set), shut down in bounded time.

    With `hard_exit`, runs still active after the grace period do not keep the process alive: their
    worker threads are not daemonic, so the process ends with os._exit (a clustering cut short leaves
    its plan pending for the next start).
    """
    config = load_daemon_config(config_path)
    logging.getLogger().setLevel(config.daemon.logging.level)
    stop = stop or threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        log.info("signal %s: shutting down", signal.Signals(signum).name)
        stop.set()

    reload_requested = threading.Event()

    def request_reload(signum: int, frame: FrameType | None) -> None:
        reload_requested.set()  # applied by the main loop, not inside the signal handler

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, request_stop)
        signal.signal(signal.SIGHUP, request_reload)
    daemon = Daemon(config)
    daemon.start()
    try:
        while not stop.wait(0.2):
            if reload_requested.is_set():
                reload_requested.clear()
                log.info("SIGHUP: reloading %s", config.path)
                daemon.reload_from_file()
    finally:
        finished = daemon.stop()
    if not finished and hard_exit:
        logging.shutdown()
        os._exit(2)
    return 0 if finished else 2
