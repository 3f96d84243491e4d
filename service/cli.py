"""`hudi-table-service` command line. Errors are logged once here, at the boundary."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from service import collector
from service.errors import HudiTableServiceError

log = logging.getLogger("hudi_table_service")


def _add_table_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-path", required=True, help="table base URI (path, file:, s3a://, hdfs://)")
    parser.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="storage backend option, e.g. endpoint_override=host:port for S3-compatible servers",
    )


def _storage_options(pairs: Sequence[str]) -> dict[str, str]:
    from service.command_context import parse_key_values

    return parse_key_values(pairs, "--storage-option")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hudi-table-service", description=__doc__)
    parser.add_argument("--log-level", default="INFO")
    sub = parser.add_subparsers(dest="command", required=True)

    status = sub.add_parser("status", help="show a table's timeline, pending plans and live file groups")
    _add_table_args(status)
    status.add_argument("--json", action="store_true", help="print one JSON object")

    from service.cleaning.command import add_clean_arguments

    clean = sub.add_parser("clean", help="clean old file versions by the table's cleaning policy")
    _add_table_args(clean)
    add_clean_arguments(clean)

    from service.clustering.command import add_cluster_arguments

    cluster = sub.add_parser("cluster", help="schedule or execute clustering (modes of HoodieClusteringJob)")
    _add_table_args(cluster)
    add_cluster_arguments(cluster)

    from service.compaction.command import add_compact_arguments

    compact = sub.add_parser("compact", help="schedule compaction of a merge-on-read table (HoodieCompactor)")
    _add_table_args(compact)
    add_compact_arguments(compact)

    from service.archival.command import add_archive_arguments

    archive = sub.add_parser(
        "archive", help="archive the timeline as Hudi's archiver of the table's version does"
    )
    _add_table_args(archive)
    add_archive_arguments(archive)

    from service.repair.command import add_repair_arguments

    repair = sub.add_parser(
        "repair", help="roll back failed writes and move orphan files to a trash (a dry run unless --execute)"
    )
    _add_table_args(repair)
    add_repair_arguments(repair)

    from service.check_command import add_check_arguments

    check = sub.add_parser(
        "check", help="what each service would do to a table now, and why not (exit 2: a service refused)"
    )
    add_check_arguments(check)

    run = sub.add_parser("run", help="run the daemon (clustering and cleaning of every configured table)")
    run.add_argument("--config", required=True, metavar="FILE", help="the daemon's YAML config")

    from service.demo.live import add_demo_arguments

    demo = sub.add_parser("demo", help="the daemon beside Hudi's writer on a fresh local demo table")
    add_demo_arguments(demo)
    return parser


def cmd_status(args: argparse.Namespace) -> int:
    from service.status import render_text, table_status
    from service.table.table import HudiTable

    table = HudiTable.open(args.base_path, _storage_options(args.storage_option))
    report = table_status(table)
    print(json.dumps(report, indent=2) if args.json else render_text(report))
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    from service.cleaning.command import cmd_clean as run

    return run(args, _storage_options(args.storage_option))


def cmd_cluster(args: argparse.Namespace) -> int:
    from service.clustering.command import cmd_cluster as run

    return run(args, _storage_options(args.storage_option))


def cmd_compact(args: argparse.Namespace) -> int:
    from service.compaction.command import cmd_compact as run

    return run(args, _storage_options(args.storage_option))


def cmd_archive(args: argparse.Namespace) -> int:
    from service.archival.command import cmd_archive as run

    return run(args, _storage_options(args.storage_option))


def cmd_repair(args: argparse.Namespace) -> int:
    from service.repair.command import cmd_repair as run

    return run(args, _storage_options(args.storage_option))


def cmd_check(args: argparse.Namespace) -> int:
    from service.check_command import cmd_check as run

    return run(args)


def cmd_run(args: argparse.Namespace) -> int:
    from service.daemon import run_daemon

    return run_daemon(args.config)


def cmd_demo(args: argparse.Namespace) -> int:
    from service.demo.live import run_demo

    return run_demo(args)


COMMANDS = {
    "demo": cmd_demo,
    "status": cmd_status,
    "clean": cmd_clean,
    "cluster": cmd_cluster,
    "compact": cmd_compact,
    "archive": cmd_archive,
    "repair": cmd_repair,
    "check": cmd_check,
    "run": cmd_run,
}


def main(argv: Sequence[str] | None = None) -> int:
    collector.set_for_planning()
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return COMMANDS[args.command](args)
    except HudiTableServiceError as exc:
        log.error("%s failed: %s", args.command, exc)
        return 1
    except OSError as exc:
        # Storage that kept failing after the client's own retries (pyarrow's S3 client retries each
        # request 3 times): the run stops where it was, as a crash would, and the next one resumes.
        where = getattr(args, "base_path", None)
        log.error("%s failed: %sstorage error: %s", args.command, f"{where}: " if where else "", exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
