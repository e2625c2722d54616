#!/usr/bin/env bash
# Docker for the compose stack on a Debian machine (the compose test runs these; so can you).
#
#   bash scripts/docker.sh ready         # docker.io and docker-compose installed, a daemon answering
#   bash scripts/docker.sh base-images   # prints SA_BASE_IMAGE=, SA_REDIS_IMAGE=, SA_POSTGRES_IMAGE=
#
# ready: installs Debian's docker.io and docker-compose when missing (apt, as root or through
# sudo) and starts dockerd by hand when no daemon answers (no systemd here; its log goes to
# $SA_DOCKERD_LOG, default /var/log/dockerd.log). It fails with the reason when Docker cannot run.
#
# base-images: the upstream images of docker-compose.yml when the registry serves them; else
# local stand-ins built from a debootstrap rootfs of this machine's Debian release and mirror
# (scripts/local-images/): Debian's Python 3.11 carrying this machine's TLS authorities and the
# wheels of its pip find-links (so pip inside a build reaches the index as it does here),
# Redis and PostgreSQL. Built once; later calls reuse them (Docker's build cache).
set -euo pipefail
cd "$(dirname "$0")/.."

UPSTREAM_PYTHON=python:3.11-slim
UPSTREAM_REDIS=redis:7-alpine
UPSTREAM_POSTGRES=postgres:15
LOCAL=structured-agents-local

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo -n"

say() { echo "docker.sh: $*" >&2; }
die() { say "$*"; exit 1; }

apt_install() {
  say "installing $* from Debian packages"
  # Another apt (a second session, an unattended upgrade) may hold the lock: wait for it.
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q >&2 || die "apt-get update failed (as $(id -un))"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q "$@" >&2 \
    || die "apt-get install $* failed (as $(id -un); root or passwordless sudo is needed)"
}

daemon_answers() { timeout 20 docker info >/dev/null 2>&1; }

ready() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
  [ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
  daemon_answers && return 0
  if ! pgrep -x dockerd >/dev/null; then
    local log=${SA_DOCKERD_LOG:-/var/log/dockerd.log}
    say "starting dockerd (log: $log)"
    # Detached from this shell so it outlives the test that started it.
    $SUDO setsid sh -c "exec dockerd --default-ulimit nofile=20000:20000 >>'$log' 2>&1" </dev/null &
  fi
  for _ in $(seq 60); do
    daemon_answers && return 0
    sleep 1
  done
  local why
  why=$(docker info 2>&1 | tail -n 3 || true)
  die "the Docker daemon does not answer after 60 s: ${why}$( [ -r "${SA_DOCKERD_LOG:-/var/log/dockerd.log}" ] \
    && printf '\n--- dockerd log ---\n%s' "$(tail -n 20 "${SA_DOCKERD_LOG:-/var/log/dockerd.log}")")"
}

# The machine's Debian mirror and release, as its own apt sources name them.
debian_mirror() {
  local uri
  uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
  [ -n "$uri" ] || uri=$(awk '$1 == "deb" && $2 !~ /^\[/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  [ -n "$uri" ] || die "no Debian mirror in /etc/apt/sources.list{,.d}: set SA_DEBIAN_MIRROR"
  echo "$uri"
}

debian_image() {
  local release image
  release=$(. /etc/os-release && echo "${VERSION_CODENAME:?}")
  image="$LOCAL/debian:$release"
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
    local rootfs mirror=${SA_DEBIAN_MIRROR:-$(debian_mirror)}
    rootfs=$(mktemp -d)
    say "debootstrap $release from $mirror"
    local start=$SECONDS
    $SUDO debootstrap --variant=minbase "$release" "$rootfs" "$mirror" >/dev/null || die "debootstrap failed"
    $SUDO tar -C "$rootfs" -c . | docker import - "$image" >/dev/null
    $SUDO rm -rf "$rootfs"
    say "$image imported from debootstrap in $((SECONDS - start)) s"
  fi
  echo "$image"
}

# The wheels pip finds on this machine without an index (find-links directories).
find_links() {
  local links=${PIP_FIND_LINKS:-$(python3 -m pip config get global.find-links 2>/dev/null || true)}
  local link
  for link in $links; do
    link=${link#file://}
    [ -d "$link" ] && echo "$link"
  done
}

build_local() {
  local name=$1 debian=$2 context
  context=$(mktemp -d)
  cp -r "scripts/local-images/$name/." "$context/"
  if [ "$name" = python ]; then
    mkdir -p "$context/certs" "$context/wheels"
    cp /usr/local/share/ca-certificates/*.crt "$context/certs/" 2>/dev/null || true
    local link
    for link in $(find_links); do cp "$link"/*.whl "$context/wheels/" 2>/dev/null || true; done
  fi
  local start=$SECONDS
  docker build -q --build-arg "DEBIAN_IMAGE=$debian" -t "$LOCAL/$name:local" "$context" >&2 \
    || die "building the local $name image failed"
  rm -rf "$context"
  say "$LOCAL/$name:local built in $((SECONDS - start)) s"
  echo "$LOCAL/$name:local"
}

base_images() {
  if timeout 60 docker pull -q "$UPSTREAM_PYTHON" >&2 && timeout 60 docker pull -q "$UPSTREAM_REDIS" >&2 \
    && timeout 60 docker pull -q "$UPSTREAM_POSTGRES" >&2; then
    printf 'SA_BASE_IMAGE=%s\nSA_REDIS_IMAGE=%s\nSA_POSTGRES_IMAGE=%s\n' \
      "$UPSTREAM_PYTHON" "$UPSTREAM_REDIS" "$UPSTREAM_POSTGRES"
    return
  fi
  say "the image registry cannot be reached: building local base images"
  local debian name out pids=()
  debian=$(debian_image)
  out=$(mktemp -d)
  # The three builds mostly wait on the network and dpkg: side by side they take the time of one.
  for name in python redis postgres; do
    build_local "$name" "$debian" >"$out/$name" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || die "a local base image did not build (above)"; done
  printf 'SA_BASE_IMAGE=%s\nSA_REDIS_IMAGE=%s\nSA_POSTGRES_IMAGE=%s\n' \
    "$(cat "$out/python")" "$(cat "$out/redis")" "$(cat "$out/postgres")"
  rm -rf "$out"
}

case "${1:-}" in
  ready) ready ;;
  base-images) base_images ;;
  *) die "usage: bash scripts/docker.sh ready|base-images" ;;
esac
