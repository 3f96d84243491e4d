"""Run small Java programs against the real Hudi 0.15.0 bundle, without starting Spark.

Tests use this to prove interop with Hudi's own Java code (Avro deserializers, bloom filters,
lock providers). Sources live in `tests/support/java/`; each is compiled once per content hash.
The classpath is the Hudi bundle plus pyspark's jars (Hadoop, Avro, Jackson come from there).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from tests.support.paths import HUDI_BUNDLE, JAVA_BUILD_DIR, pyspark_jars_dir

JAVA_SOURCES = Path(__file__).parent / "java"
JAVA_OPENS = [
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
]


def classpath(extra: list[Path] | None = None, bundle: Path = HUDI_BUNDLE) -> str:
    if not bundle.exists():
        raise RuntimeError(f"Hudi bundle missing at {bundle}; run ./run setup")
    parts = [str(p) for p in extra or []] + [str(bundle), f"{pyspark_jars_dir()}/*"]
    return ":".join(parts)


def compile_program(name: str) -> Path:
    """Compile `tests/support/java/<name>.java`; returns the class directory."""
    source = JAVA_SOURCES / f"{name}.java"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    out = JAVA_BUILD_DIR / f"{name}-{digest}"
    if not (out / f"{name}.class").exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["javac", "-nowarn", "-cp", classpath(), "-d", str(out), str(source)],
            check=True,
            capture_output=True,
            text=True,
        )
    return out


def run_java(
    name: str, *args: str, timeout_s: float = 120, check: bool = True, bundle: Path = HUDI_BUNDLE
) -> subprocess.CompletedProcess[str]:
    """Compile (if needed, against Hudi 0.15.0) and run `<name>.main(args)` with `bundle` on the class
    path (another Hudi version's, for a program whose calls both have); returns the finished process."""
    classes = compile_program(name)
    cmd = ["java", *JAVA_OPENS, "-cp", classpath([classes], bundle), name, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"java {name} {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
        )
    return proc
