#!/bin/sh
# Runs the wire-protocol tests of a checkout of the public AgentChat
# repository (test/*.test.js) against `foreman serve` in place of the
# repository's own server. The checkout must already be built (npm install
# at its top compiles dist/). Needs Node 20.11 or later, and Go.
#
#   scripts/stock-tests/run.sh [--stock] CHECKOUT [TEST[:PATTERN] ...]
#
# TEST is a test file's name without .test.js (the default: the files
# docs/agentchat-compat.md lists); PATTERN runs only its tests whose names
# match that regular expression. --stock runs them against the checkout's
# own server instead, for comparison. A file still running after 120 s
# fails. Exit status 1 if any test failed.
set -eu
shim=1
if [ "${1:-}" = --stock ]; then shim=; shift; fi
[ $# -ge 1 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
checkout=$(cd "$1" && pwd)
shift
[ -f "$checkout/dist/lib/server.js" ] && [ -d "$checkout/node_modules/ws" ] ||
	{ echo "$checkout is not a built AgentChat checkout (no dist/lib/server.js or node_modules/ws): run npm install there" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cleanup() {
	# Servers left behind by a test process that was killed (those pids
	# that are still this foreman serve, not a process that took the pid).
	if [ -f "$work/foreman-serve.pids" ]; then
		while read -r pid; do
			case $(ps -o args= -p "$pid" 2>/dev/null) in "$work/foreman serve"*) kill "$pid" ;; esac
		done <"$work/foreman-serve.pids"
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
import=
if [ -n "$shim" ]; then
	(cd "$here/../.." && go build -o "$work/foreman" ./cmd/foreman)
	import="--import=$here/register.mjs"
fi
[ $# -gt 0 ] || set -- client.integration history.integration presence session-conflict challenge-auth \
	identity.integration health verification file-chunk daemon server-directory
status=0
for test in "$@"; do
	echo "== $test"
	name=${test%%:*}
	pattern=.
	[ "$name" = "$test" ] || pattern=${test#*:}
	# The tests write identity files and the like where they run and in
	# the home directory: both are $work.
	(cd "$work" && HOME="$work" FOREMAN_BIN="$work/foreman" AGENTCHAT_CHECKOUT="$checkout" \
		node $import --test --test-force-exit --test-concurrency=1 --test-timeout=120000 \
		--test-name-pattern="$pattern" --test-reporter=spec "$checkout/test/$name.test.js") || status=1
	rm -f "$work"/foreman-serve-*.log
done
exit $status
