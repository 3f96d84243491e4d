"""`hudi-table-service check`: the report of `service.check` for one table, from the command line's
settings or from a daemon config's table entry (`--config FILE --table NAME`: what the daemon would do)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping

from service.check import CheckInputs, check_table, exit_code, render_check
from service.command_context import (
    add_service_arguments,
    default_lock_provider,
    parse_key_values,
    zone_choice,
)
from service.config.daemon import ZONE_SETTINGS, DaemonConfig, TableEntry, load_daemon_config
from service.config.hoodie import HoodieConfig
from service.config.props import load_hoodie_props
from service.errors import ConfigError
from service.table.properties import TableServiceKind
from service.table.table import HudiTable


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-path", help="table base URI (with --config: defaults to the entry's)")
    parser.add_argument(
        "--storage-option", action="append", default=[], metavar="KEY=VALUE",
        help="storage backend option (with --config: the entry's storage_options)",
    )  # fmt: skip
    parser.add_argument(
        "--config", metavar="FILE", help="a daemon config: check as the daemon would serve it"
    )
    parser.add_argument("--table", metavar="NAME", help="the table entry of --config to check")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_service_arguments(parser)


def cmd_check(args: argparse.Namespace) -> int:
    if args.config:
        config = load_daemon_config(args.config)
        entry = _entry(config, args.table, args.base_path)
        base_path = args.base_path or entry.settings.base_path
        storage_options: Mapping[str, str] = entry.settings.storage_options
        inputs = CheckInputs(
            config=entry.hoodie,
            zone=entry.zone_choice,
            zone_setting=ZONE_SETTINGS,
            lock_provider=config.daemon.lock.provider,
            enabled={
                TableServiceKind.CLUSTERING: entry.settings.clustering.enabled,
                TableServiceKind.CLEANING: entry.settings.cleaning.enabled,
                TableServiceKind.COMPACTION: not entry.settings.compaction.disabled,
            },
        )
    else:
        if not args.base_path:
            raise ConfigError("check: --base-path, or --config with --table, names the table")
        base_path, storage_options = args.base_path, parse_key_values(args.storage_option, "--storage-option")
        props = load_hoodie_props([args.props] if args.props else [], args.hoodie_conf)
        hoodie = HoodieConfig.from_mapping(props, base_path)
        inputs = CheckInputs(
            config=hoodie,
            zone=zone_choice(args.timezone),
            zone_setting="--timezone",
            lock_provider=args.lock_provider or default_lock_provider(hoodie),
            enabled={},
        )
    table = HudiTable.open(base_path, storage_options)
    report = check_table(table, inputs)
    print(json.dumps(report, indent=2) if args.json else render_check(report))
    return exit_code(report)


def _entry(config: DaemonConfig, name: str | None, base_path: str | None) -> TableEntry:
    if name is not None:
        try:
            return config.table(name)
        except KeyError:
            known = ", ".join(e.name for e in config.tables) or "none"
            raise ConfigError(f"{config.path}: no table entry {name!r} (entries: {known})") from None
    if base_path is not None:
        for entry in config.tables:
            if entry.settings.base_path.rstrip("/") == base_path.rstrip("/"):
                return entry
    raise ConfigError(
        f"{config.path}: --table NAME (or the --base-path of an entry) names the table to check"
    )
