"""One contender's process (`bench.contenders.ContenderProcess`): a SparkSession of its own, and calls
read from standard input, one JSON line each, answered on the original standard output.

The first line is `{"session": {...}}`, the keyword arguments of `bench.hudi_clustering.start_session`
(answered with the Spark application's id once the session is up), or `{"session": null}` for a
contender that runs without Spark (its functions get None); every later one
`{"function": "module:name", "kwargs": {...}}`, which runs `name(spark, **kwargs)` and answers
`{"result": ...}` or `{"error": "<traceback>"}`. End of input stops the session. Everything the
benchmark code, Spark or the JVM print goes to standard error, so nothing but answers reaches the
parent.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any


def _answers() -> Any:
    """The original standard output for answers; file descriptor 1 then points at standard error,
    for this process and the JVM it starts."""
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answers


def _answer(out: Any, message: dict[str, Any]) -> None:
    out.write(json.dumps(message, default=str) + "\n")
    out.flush()


def main() -> int:
    answers = _answers()
    session = None
    try:
        for line in sys.stdin:
            request = json.loads(line)
            try:
                if "session" in request:
                    if request["session"] is not None:  # None: a contender that needs no Spark
                        from bench.hudi_clustering import start_session

                        kwargs = dict(request["session"])
                        kwargs["work_dir"] = Path(kwargs["work_dir"])
                        session = start_session(**kwargs)
                    # The application id lets the parent find this session's executors on a cluster.
                    application = None if session is None else session.sparkContext.applicationId
                    _answer(answers, {"result": application})
                    continue
                module_name, _, name = request["function"].partition(":")
                function = getattr(importlib.import_module(module_name), name)
                _answer(answers, {"result": function(session, **request["kwargs"])})
            except Exception:  # the parent decides; the traceback goes with the answer
                _answer(answers, {"error": traceback.format_exc()})
    finally:
        if session is not None:
            session.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
