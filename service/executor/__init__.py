"""The Spark side in one place: the pooled session (`session.py`) and the jobs it runs, a clustering
group (`clustering_job.py`) and a compaction plan's operations (`compaction_job.py`).

The jobs' functions run on executors' Python workers; `session._project_zip` ships this project to them.
"""

from service.executor.session import SparkExecutor, add_spark_arguments, executor_from_args

__all__ = ["SparkExecutor", "add_spark_arguments", "executor_from_args"]
