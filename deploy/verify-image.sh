#!/usr/bin/env bash
# Verify the container image on a machine without a Docker engine or registry access:
# hadolint the Dockerfile, debootstrap a Debian bookworm base (Python 3.11) locally, import it into
# podman, build the image against it with chroot isolation, and smoke-test the installed CLI.
#
#   deploy/verify-image.sh            (needs root)
#
# It installs what it calls: podman and debootstrap (Debian packages) when missing, and hadolint
# through `./run setup` (the `deploy` extra, pinned in constraints.txt, into $HTS_HOME/venv).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HTS_HOME="${HTS_HOME:-$HOME/.cache/hudi-table-service}"
BASE_TAG="localhost/hts-base:bookworm"
IMAGE_TAG="localhost/hudi-table-service:dev"
ROOTFS="$HTS_HOME/image-base/rootfs"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

say() { printf 'verify-image: %s\n' "$*"; }

missing=()
for tool in podman debootstrap; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The venv with hadolint (idempotent: a no-op when it is up to date).
HTS_HOME="$HTS_HOME" "$REPO/run" setup
say "hadolint"
"$HTS_HOME/venv/bin/hadolint" "$REPO/Dockerfile"

if ! podman image exists "$BASE_TAG"; then
    if [ ! -x "$ROOTFS/usr/bin/python3" ]; then
        say "debootstrap bookworm base into $ROOTFS (once)"
        rm -rf "$ROOTFS" && mkdir -p "$ROOTFS"
        debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
            bookworm "$ROOTFS" "$MIRROR" >"$HTS_HOME/image-base/debootstrap.log"
    fi
    # This base exists only to verify the build here. Where egress goes through a TLS proxy with
    # its own CA (this machine's case), the build must trust what the host trusts; the product
    # image itself (python:3.11-slim base) carries no such CA.
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$ROOTFS/usr/local/share/ca-certificates/"
        chroot "$ROOTFS" update-ca-certificates >/dev/null
        printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$ROOTFS/etc/pip.conf"
    fi
    tar -C "$ROOTFS" -c . | podman import - "$BASE_TAG" >/dev/null
fi

# Docker format: the OCI image format has no HEALTHCHECK.
say "podman build (chroot isolation, docker format) against $BASE_TAG"
podman build --format docker --isolation chroot --build-arg BASE_IMAGE="$BASE_TAG" -t "$IMAGE_TAG" "$REPO"

say "image checks"
podman image inspect "$IMAGE_TAG" --format '{{.Config.User}} {{.Config.Entrypoint}} {{.Config.Cmd}}'
user="$(podman image inspect "$IMAGE_TAG" --format '{{.Config.User}}')"
[ "$user" = "10001" ] || { say "image must run as the non-root user 10001, got '$user'"; exit 1; }
podman image inspect "$IMAGE_TAG" --format '{{json .Config.Healthcheck}}' | grep -q healthz \
    || { say "image has no /healthz HEALTHCHECK"; exit 1; }

say "smoke test: the CLI runs inside the image"
if podman run --rm "$IMAGE_TAG" --help >/dev/null 2>&1; then
    podman run --rm "$IMAGE_TAG" --help | head -n 5
else
    # Sandboxes without a container runtime can still build; run the CLI in a chroot of the image.
    mnt="$(podman image mount "$IMAGE_TAG")"
    chroot "$mnt" /opt/hudi-table-service/bin/hudi-table-service --help | head -n 5
    podman image unmount "$IMAGE_TAG" >/dev/null
fi
say "ok: $IMAGE_TAG"
