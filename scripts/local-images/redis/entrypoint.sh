#!/bin/sh
# As the upstream image: redis-server without protected mode, since it serves the stack's network.
set -e
if [ "$1" = redis-server ]; then
  shift
  exec redis-server --protected-mode no "$@"
fi
exec "$@"
