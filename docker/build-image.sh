#!/usr/bin/env bash
# Build the sandbox image offline with the docker CLI (the same steps as
# `deepdebug sandbox build`, for machines without a deepdebug binary yet):
# debootstrap a minimal Debian with python3 + pytest from the host's apt mirror, add user
# 1000, and `docker import` the rootfs (FROM scratch: nothing is pulled). Needs root.
#   docker/build-image.sh [TAG] [MIRROR] [SUITE]
set -euo pipefail
tag=${1:-deepdebug-python:latest}
mirror=${2:-http://deb.debian.org/debian}
suite=${3:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-bookworm}")}
suite=${suite:-bookworm}
command -v debootstrap >/dev/null || { echo "install debootstrap: apt-get install -y debootstrap" >&2; exit 1; }
work=$(mktemp -d /var/tmp/deepdebug-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase --include=python3,python3-pytest "$suite" "$work/rootfs" "$mirror"
echo 'runner:x:1000:1000:deepdebug runner:/tmp:/usr/sbin/nologin' >> "$work/rootfs/etc/passwd"
echo 'runner:x:1000:' >> "$work/rootfs/etc/group"
rm -rf "$work/rootfs"/var/cache/apt/archives/* "$work/rootfs"/var/lib/apt/lists/* \
       "$work/rootfs"/usr/share/doc/* "$work/rootfs"/usr/share/man/* "$work/rootfs"/usr/share/locale/*
tar --numeric-owner -C "$work/rootfs" -c . | docker import \
  --change 'USER 1000:1000' --change 'WORKDIR /tmp' --change 'ENV PYTHONDONTWRITEBYTECODE=1' \
  --change 'CMD ["/usr/bin/python3"]' - "$tag"
docker run --rm --network none "$tag" /usr/bin/python3 -m pytest --version
