#!/bin/sh
# Starts Node with its old-generation heap sized from the container's memory limit, then
# becomes that Node process (exec: no shell stays resident; signals reach Node directly).
#
#   sh apps/api/scripts/node-with-heap-limit.sh apps/api/dist/main.js [args…]
#
# Without a flag V8 sizes its heap from the machine's memory, not the container's, and under
# load lets the old generation grow far past the live heap between full collections: the
# container is OOM-killed before V8 feels any pressure (issue #35). With
# --max-old-space-size at PROSPECT_HEAP_PERCENT (default 50) % of the limit, the rest is left for
# what is not the old generation: the young generation (up to 48 MiB), code, the native side of
# the process (pg, OpenSSL, argon2, buffers) and headroom. Measured in docs/performance.md.
#
# The limit: cgroup v2's memory.max, else cgroup v1's memory/memory.limit_in_bytes, under
# PROSPECT_CGROUP_ROOT (default /sys/fs/cgroup; tests point it at a fake). No limit ("max", v1's
# huge number, or no file) → no flag: V8's own default. An operator's own --max-old-space-size or
# --max-semi-space-size in NODE_OPTIONS wins: that flag is not added.
#
# The young generation is sized from the limit too: --max-semi-space-size at a twelfth of it (the
# young generation is two semi-spaces: a sixth), from 16 MiB (V8's default) to 64 MiB. At this
# service's allocation rate (60-80 KiB a request) V8's 16 MiB promotes request garbage into the old
# generation, and a capped old generation then collects it in full several times a second: under
# 384Mi that cost 11-28 % of req/s; with 32 MiB semi-spaces the capped API is within the noise of
# the uncapped one, at a peak RSS of about 235 MiB (docs/performance.md, 2026-11-25, night).
set -eu

root="${PROSPECT_CGROUP_ROOT:-/sys/fs/cgroup}"
percent="${PROSPECT_HEAP_PERCENT:-50}"
# Below this the API cannot hold its live heap (about 60 MB): a smaller limit fails loudly rather than thrashing.
min_mib=64

case "$percent" in
  '' | *[!0-9]*) echo "PROSPECT_HEAP_PERCENT must be a whole number from 10 to 90 (got \"$percent\")" >&2; exit 2 ;;
esac
if [ "$percent" -lt 10 ] || [ "$percent" -gt 90 ]; then
  echo "PROSPECT_HEAP_PERCENT must be a whole number from 10 to 90 (got \"$percent\")" >&2
  exit 2
fi

limit=""
if [ -r "$root/memory.max" ]; then
  limit="$(cat "$root/memory.max")"
elif [ -r "$root/memory/memory.limit_in_bytes" ]; then
  limit="$(cat "$root/memory/memory.limit_in_bytes")"
fi

flag=""
semi_flag=""
case "$limit" in
  '' | max) ;;
  *[!0-9]*) echo "node-with-heap-limit: ignoring an unreadable memory limit \"$limit\"" >&2 ;;
  *)
    # cgroup v1 says "no limit" with a number near 2^63: anything from 1 PiB up is no limit.
    # (Shell arithmetic is 64-bit signed; 19 digits or more never reach it.)
    if [ "${#limit}" -lt 19 ] && [ "$limit" -lt 1125899906842624 ]; then
      mib=$((limit / 1048576 * percent / 100))
      if [ "$mib" -lt "$min_mib" ]; then mib=$min_mib; fi
      flag="--max-old-space-size=$mib"
      semi=$((limit / 1048576 / 12))
      if [ "$semi" -lt 16 ]; then semi=16; fi
      if [ "$semi" -gt 64 ]; then semi=64; fi
      semi_flag="--max-semi-space-size=$semi"
    fi
    ;;
esac

case " ${NODE_OPTIONS:-} " in
  *--max-old-space-size*) flag="" ;;
esac
case " ${NODE_OPTIONS:-} " in
  *--max-semi-space-size*) semi_flag="" ;;
esac

# Unquoted on purpose: an empty flag must vanish, not become an empty argument.
# shellcheck disable=SC2086
exec node $flag $semi_flag "$@"
