#!/usr/bin/env bash
# with-progress.sh LABEL CMD...: run a long build, printing how long it has
# been running every 20 seconds so a first build does not look hung.
set -u
label=$1; shift
"$@" &
pid=$!
start=$SECONDS
while kill -0 "$pid" 2>/dev/null; do
	for _ in $(seq 20); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 1
	done
	kill -0 "$pid" 2>/dev/null && echo "   ... still building $label ($((SECONDS - start))s)"
done
wait "$pid"
rc=$?
[ $rc -eq 0 ] && echo "   built $label in $((SECONDS - start))s"
exit $rc
