#!/usr/bin/env bash
# test-deps.sh [PACKAGE...]: the system packages make test needs besides
# Go, gcc, git and make: Debian's chromium (the dashboard's browser test),
# e2fsprogs (chattr, for a rollback test), redis-server (Argo CD's cache, in the e2e tests and the
# demo), and openssl and curl, which the docs' command blocks run as pasted
# (TestDocsRunAsPasted). With arguments, only those (make demo needs redis-server alone).
# Installed with apt-get when missing and we are root; otherwise the
# missing ones are named, so the failure is clear.
set -euo pipefail

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(chromium e2fsprogs redis-server openssl curl)

installed() {
	case $1 in
	chromium) command -v chromium >/dev/null ;;
	e2fsprogs) command -v chattr >/dev/null ;;
	redis-server) command -v redis-server >/dev/null ;;
	openssl) command -v openssl >/dev/null ;;
	curl) command -v curl >/dev/null ;;
	*) dpkg -s "$1" >/dev/null 2>&1 ;;
	esac
}

missing=()
for p in "${want[@]}"; do
	installed "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
	echo ">> installing ${missing[*]} (apt-get)"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	exit 0
fi
echo "pinbot's tests and demo need the Debian packages: ${missing[*]}" >&2
echo "install them (sudo apt-get install ${missing[*]}) and run make again" >&2
exit 1
