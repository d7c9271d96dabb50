#!/bin/sh
# feedbench/haproxy entrypoint, same behaviour as the official haproxy image's:
# `haproxy ARGS` (or just `-f ...`) runs `haproxy -W -db ARGS` in the foreground via exec,
# so HAProxy is PID 1 and receives the stop signal itself. Anything else is exec'd as given.
set -e

# first argument is an option such as `-f` or `--some-option`: run haproxy with them
if [ "${1#-}" != "$1" ]; then
	set -- haproxy "$@"
fi

if [ "$1" = 'haproxy' ]; then
	shift
	# -W master-worker mode (reloads via SIGUSR2), -db no background, logs to stderr
	set -- haproxy -W -db "$@"
fi

exec "$@"
