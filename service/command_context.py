"""What every table-service command sets up: the table, its hoodie.* config, the lock, the zone."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo

from service.config.hoodie import HoodieConfig
from service.config.hoodie_keys import BASE_PATH
from service.config.locking import LockProviderKind, WriteConcurrencyMode
from service.config.props import load_hoodie_props
from service.config.zones import ZoneChoice, machine_zone, named_zone
from service.errors import ConfigError, HudiTableServiceError
from service.lock import create_lock
from service.lock.base import TableLock
from service.table.properties import TableServiceKind
from service.table.table import HudiTable


def parse_key_values(pairs: Sequence[str], option: str) -> dict[str, str]:
    """Repeated `--option KEY=VALUE` arguments (a later pair wins)."""
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise HudiTableServiceError(f"{option} {pair!r} is not KEY=VALUE")
        values[key.strip()] = value.strip()
    return values


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument(
        "--lock-provider",
        choices=["in-process", "zookeeper"],
        help="table lock; default: hoodie.write.lock.provider under optimistic concurrency, else in-process",
    )
    parser.add_argument(
        "--timezone",
        metavar="ZONE",
        help="the writers' time zone (IANA name) for a table with hoodie.table.timeline.timezone=LOCAL; "
        "default: this machine's zone, as Java's services use their JVM's",
    )


@dataclass
class CommandContext:
    table: HudiTable
    config: HoodieConfig
    lock: TableLock
    zone: tzinfo


def open_context(
    args: argparse.Namespace, storage_options: Mapping[str, str], service: TableServiceKind
) -> CommandContext:
    table = HudiTable.open(args.base_path, storage_options)
    # Before anything is planned, locked or written: `status` reads every table, a service may refuse.
    table.check_service_supported(service)
    props = load_hoodie_props([args.props] if args.props else [], args.hoodie_conf)
    config = HoodieConfig.from_mapping(props, table.name)
    zone = table.timeline_zone(parse_zone(args.timezone), "--timezone")
    provider = args.lock_provider or default_lock_provider(config)
    lock = create_lock(provider, table.name, {**config.effective(), BASE_PATH: table.base_uri})
    return CommandContext(table, config, lock, zone)


def default_lock_provider(config: HoodieConfig) -> str:
    if config.write_concurrency_mode is WriteConcurrencyMode.OPTIMISTIC_CONCURRENCY_CONTROL:
        return "zookeeper" if config.lock.provider is LockProviderKind.ZOOKEEPER else "in-process"
    return "in-process"  # a single-writer Hudi table takes no lock; exclude this process's threads only


def parse_zone(name: str | None) -> tzinfo | None:
    choice = zone_choice(name)
    return choice.zone if choice is not None else None


def zone_choice(name: str | None) -> ZoneChoice | None:
    """`--timezone`, else this machine's zone (`service.config.zones.machine_zone`); None when the
    machine names none."""
    if name:
        zone = named_zone(name)
        if zone is None:
            raise ConfigError(f"--timezone {name!r} is not a known IANA time zone")
        return ZoneChoice(zone, f"--timezone {name}")
    return machine_zone()
