#!/usr/bin/env bash
# feedbench/postgres entrypoint: the official postgres image's behaviour on Debian's PostgreSQL 15.
#
# On the first start (no "$PGDATA/PG_VERSION") it runs initdb for POSTGRES_USER with
# POSTGRES_PASSWORD, allows password logins from any address (POSTGRES_HOST_AUTH_METHOD,
# default scram-sha-256), starts a socket-only temporary server, creates POSTGRES_DB, runs
# /docker-entrypoint-initdb.d/* (*.sh, *.sql, *.sql.gz, *.sql.xz) in name order, stops it,
# then execs the server so PostgreSQL is PID 1 and receives the stop signal itself.
# POSTGRES_INITDB_ARGS is split on whitespace (never eval'd). VAR_FILE variants are honoured.
set -Eeuo pipefail

# file_env VAR [DEFAULT]: VAR or the content of the file named by VAR_FILE (exclusive).
file_env() {
	local var="$1" file_var="${1}_FILE" def="${2:-}" val
	if [ -n "${!var:-}" ] && [ -n "${!file_var:-}" ]; then
		echo >&2 "error: both $var and $file_var are set (but are exclusive)"
		exit 1
	fi
	val="$def"
	if [ -n "${!var:-}" ]; then
		val="${!var}"
	elif [ -n "${!file_var:-}" ]; then
		val="$(< "${!file_var}")"
	fi
	export "$var"="$val"
	unset "$file_var"
}

# first argument is an option such as `-c foo=bar`: run postgres with them
if [ "${1:0:1}" = '-' ]; then
	set -- postgres "$@"
fi

if [ "$1" != 'postgres' ]; then
	exec "$@"
fi

file_env POSTGRES_PASSWORD
file_env POSTGRES_USER postgres
file_env POSTGRES_DB "$POSTGRES_USER"
file_env POSTGRES_INITDB_ARGS
: "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"

mkdir -p "$PGDATA"
chmod 00700 "$PGDATA" 2>/dev/null || :

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != 'trust' ]; then
		cat >&2 <<-'EOM'
			error: database is uninitialized and superuser password is not specified.
			       Set POSTGRES_PASSWORD to a non-empty value for the superuser, or
			       POSTGRES_HOST_AUTH_METHOD=trust to allow all connections without a password.
		EOM
		exit 1
	fi

	initdb_args=(--username="$POSTGRES_USER")
	if [ -n "$POSTGRES_INITDB_ARGS" ]; then
		read -r -a extra <<< "$POSTGRES_INITDB_ARGS"
		initdb_args+=("${extra[@]}")
	fi
	if [ -n "$POSTGRES_PASSWORD" ]; then
		# the process substitution must be on initdb's own command line to stay open
		initdb "${initdb_args[@]}" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD")
	else
		initdb "${initdb_args[@]}"
	fi

	printf '\nhost all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >> "$PGDATA/pg_hba.conf"

	# temporary server reachable only through the unix socket while initialising
	PGUSER="$POSTGRES_USER" PGPASSWORD="$POSTGRES_PASSWORD" \
		pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start

	export PGPASSWORD="$POSTGRES_PASSWORD"
	psql=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc)
	if [ "$POSTGRES_DB" != 'postgres' ]; then
		"${psql[@]}" --dbname postgres --set db="$POSTGRES_DB" <<-'EOSQL'
			CREATE DATABASE :"db" ;
		EOSQL
	fi
	psql+=(--dbname "$POSTGRES_DB")

	shopt -s nullglob
	for f in /docker-entrypoint-initdb.d/*; do
		case "$f" in
			*.sh)
				if [ -x "$f" ]; then
					echo "$0: running $f"; "$f"
				else
					echo "$0: sourcing $f"; . "$f"
				fi
				;;
			*.sql) echo "$0: running $f"; "${psql[@]}" -f "$f" ;;
			*.sql.gz) echo "$0: running $f"; gunzip -c "$f" | "${psql[@]}" ;;
			*.sql.xz) echo "$0: running $f"; xzcat "$f" | "${psql[@]}" ;;
			*) echo "$0: ignoring $f" ;;
		esac
	done
	shopt -u nullglob

	pg_ctl -D "$PGDATA" -m fast -w stop
	unset PGPASSWORD
	echo
	echo 'PostgreSQL init process complete; ready for start up.'
	echo
fi

exec "$@"
