#!/usr/bin/env bash
# make demo: the Reminders sample creating a store, writing and reading records.
set -euo pipefail
cd "$(dirname "$0")/.."

swift build -c release --product reminders >/dev/null
reminders=".build/release/reminders"
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
db="$workdir/reminders.sqlite"

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; }

step reminders --db "$db" add Buy milk
milk=$("$reminders" --db "$db" add Buy milk); echo "$milk"
step reminders --db "$db" add Call the plumber
"$reminders" --db "$db" add Call the plumber
step reminders --db "$db" add "Ünïcödé & 'quotes'; DROP TABLE reminders; --"
"$reminders" --db "$db" add "Ünïcödé & 'quotes'; DROP TABLE reminders; --"
step reminders --db "$db" done "$milk"
"$reminders" --db "$db" done "$milk"
step reminders --db "$db" list
"$reminders" --db "$db" list
step reminders --db "$db" list --json
"$reminders" --db "$db" list --json
step sqlite3 "$db" "PRAGMA journal_mode; SELECT typeof(id), typeof(done), typeof(createdAt) FROM reminders LIMIT 1"
sqlite3 "$db" "PRAGMA journal_mode; SELECT typeof(id), typeof(done), typeof(createdAt) FROM reminders LIMIT 1"
printf '\nThe store is a plain SQLite file in WAL mode; values are bound, never interpolated.\n'
