"""Our ZooKeeper table lock in its own process, driven by the line protocol of `contender.py`.

Usage: python -m tests.lock.lock_holder <zookeeper url> <base_path> <lock_key>
"""

from __future__ import annotations

import sys

from service.errors import LockError
from service.lock import create_lock


def main(argv: list[str]) -> int:
    url, base_path, lock_key = argv[:3]
    props = {
        "hoodie.write.lock.zookeeper.url": url,
        "hoodie.write.lock.zookeeper.base_path": base_path,
        "hoodie.write.lock.zookeeper.lock_key": lock_key,
        "hoodie.write.lock.zookeeper.session_timeout_ms": "10000",
    }
    lock = create_lock("zookeeper", lock_key, props)
    print("READY", flush=True)
    for line in sys.stdin:
        command = line.split()
        if command[0] == "LOCK":
            try:
                lock.acquire(int(command[1]) / 1000)
                print("ACQUIRED", flush=True)
            except LockError as error:
                print(f"TIMEOUT {error}", flush=True)
        elif command[0] == "CHECK":
            try:
                lock.check_held()
                print("HELD", flush=True)
            except LockError as error:
                print(f"LOST {error}", flush=True)
        elif command[0] == "UNLOCK":
            lock.release()
            print("RELEASED", flush=True)
        elif command[0] == "QUIT":
            break
        else:
            print(f"UNKNOWN {line.strip()}", flush=True)
    lock.release()
    print("BYE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
