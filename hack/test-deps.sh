#!/usr/bin/env bash
# The system packages make test needs besides Go, gcc, git and make:
# Debian's chromium (the dashboard's browser test), e2fsprogs (chattr,
# for a rollback test), busybox-static (the release's debug image) and
# redis-server (Argo CD's cache, in the e2e tests). Installed with apt-get when missing and we are
# root; otherwise the missing ones are named, so the failure is clear.
set -euo pipefail

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chattr >/dev/null || missing+=(e2fsprogs)
dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
command -v redis-server >/dev/null || missing+=(redis-server)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
	echo ">> installing ${missing[*]} for the tests (apt-get)"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	exit 0
fi
echo "make test needs the Debian packages: ${missing[*]}" >&2
echo "install them (sudo apt-get install ${missing[*]}) and run make test again" >&2
exit 1
