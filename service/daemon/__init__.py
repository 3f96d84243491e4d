"""The long-running daemon: the scheduler loop, the per-table runtime and its ticks, config reload.

- `scheduler`: `Daemon`, one APScheduler interval job per table and service, metrics, shutdown;
- `runtime`: `TableRuntime`, a served table's opened table, lock, refusal and failure state;
- `tick`: `TableTicker.run_iteration`, one tick (`Cleaner.run()` / `Clusterer.run()` / compaction's
  execute-pending-else-schedule), its outcome, backoff and quarantine;
- `slots`: `PrioritySlots`, the concurrency caps whose freed slots go to the best waiting table;
- `membership`: `Membership`, the tables this replica holds when replicas share them (`daemon.cluster`);
- `reload`: when the config file is re-read and what a new config changes;
- `main`: `run_daemon`, the `run` command (signals, SIGHUP reload, bounded shutdown).
"""

from service.daemon.main import run_daemon
from service.daemon.runtime import Outcome, TableRuntime, TableService
from service.daemon.scheduler import Daemon

__all__ = ["Daemon", "Outcome", "TableRuntime", "TableService", "run_daemon"]
