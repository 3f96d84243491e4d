"""Clustering execution arithmetic: how a clustering group's rows are ordered and cut into files.

Pure functions over Arrow data; the Spark job that runs them on workers is
`service/executor/clustering_job.py`.
"""
