# hudi-table-service: the table-service daemon beside Hudi's writers.
# Base: Debian bookworm with Python 3.11 (python:3.11-slim by default; deploy/verify-image.sh builds
# against a locally debootstrapped base, since no registry is reachable from the build machines).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

# Headless Java 17 runs the Spark driver and executors inside the container. Versions follow the
# base image's Debian release (security updates arrive by rebuilding), hence no apt pins.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless tini \
    && rm -rf /var/lib/apt/lists/*

ENV VIRTUAL_ENV=/opt/hudi-table-service \
    PATH=/opt/hudi-table-service/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64

# Dependencies first, in their own layer: source changes do not reinstall PySpark. Every package at
# the exact version of constraints.txt (what CI ran), as `./run setup` installs them; the build
# backend is pinned in pyproject.toml's [build-system].
COPY pyproject.toml README.md constraints.txt /src/
RUN python3 -m venv "$VIRTUAL_ENV" \
    && mkdir -p /src/service /src/strategies \
    && touch /src/service/__init__.py /src/strategies/__init__.py \
    && pip install --no-cache-dir -c /src/constraints.txt /src \
    && pip uninstall -y hudi-table-service

COPY service /src/service
COPY strategies /src/strategies
RUN pip install --no-cache-dir --no-deps -c /src/constraints.txt /src && rm -rf /src

RUN useradd --system --uid 10001 --create-home --home-dir /var/lib/hudi-table-service hts
USER 10001
WORKDIR /var/lib/hudi-table-service
# PySpark's Python workers must use the venv's interpreter (it has pyarrow and the project).
ENV PYSPARK_PYTHON=/opt/hudi-table-service/bin/python

# The config (tables, Hudi keys, ZooKeeper, metrics address) is mounted, never baked in; secrets
# such as S3 keys come from the environment or the orchestrator's secret store.
VOLUME ["/etc/hudi-table-service"]
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python3", "-c", "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=4).status != 200)"]

ENTRYPOINT ["tini", "--", "hudi-table-service"]
CMD ["run", "--config", "/etc/hudi-table-service/config.yaml"]
