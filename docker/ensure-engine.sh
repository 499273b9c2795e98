#!/usr/bin/env bash
# Make a Docker engine answer `docker info`, for CI running as root on a fresh machine:
# install what is missing from Debian's packages -- docker.io (the engine), docker-compose
# (Compose v1, when no Compose is there) and debootstrap (the base image when no registry
# is reachable) -- and start dockerd. Fails loudly (exit 1, with the daemon's log) when
# the engine cannot start.
set -euo pipefail

log() { echo "[docker-engine] $*" >&2; }
engine_up() { docker info >/dev/null 2>&1; }

missing=()
engine_up || command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 \
  || missing+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    log "ERROR: missing ${missing[*]} and not root: cannot install them"; exit 1
  fi
  log "installing ${missing[*]} from Debian's packages"
  started=$SECONDS
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  log "installed in $((SECONDS - started))s"
fi

if ! engine_up; then
  log "starting dockerd (log: /var/log/dockerd.log)"
  setsid nohup dockerd >/var/log/dockerd.log 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    engine_up && break
    sleep 1
  done
  if ! engine_up; then
    log "ERROR: the Docker engine did not start; last lines of /var/log/dockerd.log:"
    tail -n 40 /var/log/dockerd.log >&2 || true
    exit 1
  fi
fi
log "engine answers: $(docker info --format 'Docker {{.ServerVersion}}, {{.Driver}}')"
