"""`hudi-table-service clean`: one cleaning pass from the command line (mirrors Hudi's HoodieCleaner)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from datetime import datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from service.cleaning.orchestrator import Cleaner, CleanOptions, timeline_zone
from service.cleaning.results import render_result
from service.config.hoodie import HoodieConfig
from service.config.locking import LockProviderKind, WriteConcurrencyMode
from service.config.props import load_hoodie_props
from service.errors import ConfigError
from service.lock import create_lock
from service.table.table import HudiTable
from strategies.clean import DEFAULT_MAX_DELETE_FRACTION


def add_clean_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--props", metavar="FILE", help="Hudi properties file (DFSPropertiesConfiguration syntax)"
    )
    parser.add_argument(
        "--hoodie-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Hudi key, overriding --props (repeatable)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would be deleted; write nothing")
    parser.add_argument("--force", action="store_true", help="run a plan the deletion volume breaker refuses")
    parser.add_argument(
        "--max-delete-fraction",
        type=float,
        default=DEFAULT_MAX_DELETE_FRACTION,
        help="volume breaker: refuse a plan deleting more than this share of the table's data files",
    )
    parser.add_argument(
        "--lock-provider",
        choices=["in-process", "zookeeper"],
        help="table lock; default: hoodie.write.lock.provider under optimistic concurrency, else in-process",
    )
    parser.add_argument(
        "--timezone",
        metavar="ZONE",
        help="the writers' time zone (IANA name) for a table with hoodie.table.timeline.timezone=LOCAL; "
        "default: this machine's zone, as Java's cleaner uses its JVM's",
    )


def cmd_clean(args: argparse.Namespace, storage_options: Mapping[str, str]) -> int:
    table = HudiTable.open(args.base_path, storage_options)
    props = load_hoodie_props([args.props] if args.props else [], args.hoodie_conf)
    config = HoodieConfig.from_mapping(props, table.name)
    if not 0 < args.max_delete_fraction <= 1:
        raise ConfigError(f"--max-delete-fraction={args.max_delete_fraction} must be in (0, 1]")
    zone = timeline_zone(table, _zone(args.timezone))
    provider = args.lock_provider or _default_provider(config)
    lock_props = {**config.effective(), "hoodie.base.path": table.base_uri}
    lock = create_lock(provider, table.name, lock_props)
    options = CleanOptions(
        dry_run=args.dry_run, force=args.force, max_delete_fraction=args.max_delete_fraction
    )
    result = Cleaner(table, config, lock, zone, options).run()
    print(render_result(result))
    return 0


def _default_provider(config: HoodieConfig) -> str:
    if config.write_concurrency_mode is WriteConcurrencyMode.OPTIMISTIC_CONCURRENCY_CONTROL:
        return "zookeeper" if config.lock.provider is LockProviderKind.ZOOKEEPER else "in-process"
    return "in-process"  # a single-writer Hudi table takes no lock; exclude this process's threads only


def _zone(name: str | None) -> tzinfo:
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(f"--timezone {name!r} is not a known IANA time zone") from None
    return local_zone()


def local_zone() -> tzinfo:
    """This machine's zone: $TZ, else /etc/localtime's zone name, else the current UTC offset."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    localtime = Path("/etc/localtime")
    if localtime.is_symlink():
        target = str(localtime.resolve())
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    for key in candidates:
        if key:
            try:
                return ZoneInfo(key)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    offset = datetime.now().astimezone().tzinfo
    assert offset is not None
    return offset
