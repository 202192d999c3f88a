#!/usr/bin/env bash
# make demo: the Reminders sample living through three app releases on one database file.
# Release 1.0 creates it, 1.1 upgrades it (lightweight stage), 2.0 upgrades it again (a table
# rebuild that backfills dueAt and fills the search index); then 1.0 is refused on the 2.0 file.
set -euo pipefail
cd "$(dirname "$0")/.."

swift build -c release --product reminders >/dev/null
swift build -c release --product ostore >/dev/null
reminders=".build/release/reminders"
ostore=".build/release/ostore"
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
db="$workdir/reminders.sqlite"
echo "db=$db"

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
# Prints a command as one would type it: $db by name, arguments quoted where the shell needs it.
step() {
    local shown=() argument
    for argument in "$@"; do
        if [ "$argument" = "$db" ]; then
            shown+=('"$db"')
        elif [[ "$argument" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
            shown+=("$argument")
        elif [[ ! "$argument" =~ [\"\$\`\\!] ]]; then
            shown+=("\"$argument\"")
        else
            shown+=("'${argument//\'/\'\\\'\'}'")
        fi
    done
    printf '%s$ %s%s\n' "$bold" "${shown[*]}" "$plain"
}
note() { printf '\n%s# %s%s\n' "$bold" "$*" "$plain"; }
# Shows a command, then runs it: `show reminders --db "$db" list` prints `$ reminders …`.
show() {
    echo
    step "$@"
    case "$1" in
        reminders) shift; "$reminders" "$@" ;;
        ostore) shift; "$ostore" "$@" ;;
        *) "$@" ;;
    esac
}

note "Release 1.0 creates the database."
show reminders --db "$db" --schema 1.0 lists add Home
show reminders --db "$db" --schema 1.0 add "Buy milk" --list Home --due 2024-05-01
show reminders --db "$db" --schema 1.0 add "Robert'); DROP TABLE reminders; --" --due 2024-02-29
show reminders --db "$db" --schema 1.0 list

note "Release 1.1 upgrades it (adds priority, notes, tags) and can use the new columns."
show reminders --db "$db" --schema 1.1 add "Call the plumber" --priority 1 --notes 'the "kitchen" leak'
show reminders --db "$db" --schema 1.1 list

note "Release 2.0 (the default) upgrades it: dueAt is backfilled from dueDate, the search index filled."
show reminders --db "$db" list --json
show reminders --db "$db" list --search kitchen
show reminders --db "$db" list --search 'milk" OR title:*'
show reminders --db "$db" lists

note "Release 1.0 refuses the 2.0 file and leaves it alone (exit status 1, expected):"
show reminders --db "$db" --schema 1.0 list || echo "(exit status $?)"

note "The migration ledger, read by the ostore tool (no app code needed):"
show ostore status --db "$db"
show ostore check --db "$db"
printf '\nThe ledger records each stage once; values are bound, never interpolated, so the odd title is just a title.\n'
