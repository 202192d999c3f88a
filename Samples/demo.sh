#!/usr/bin/env bash
# make demo: the Reminders sample living through app releases on one database file (release 1.0
# creates it, 1.1 upgrades it, 2.1 upgrades it again with a table rebuild; then 1.0 is refused on
# the upgraded file), then three devices on different releases syncing through the reference
# server, ostore-server, on embedded SQLite, and last three users sharing lists under scope rules.
set -euo pipefail
cd "$(dirname "$0")/.."

swift build -c release --product reminders >/dev/null
swift build -c release --product ostore >/dev/null
swift build -c release --product ostore-server >/dev/null
reminders=".build/release/reminders"
ostore=".build/release/ostore"
server=".build/release/ostore-server"
workdir=$(mktemp -d)
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$workdir"
}
trap cleanup EXIT
db="$workdir/reminders.sqlite"
echo "db=$db"

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
# Prints a command as one would type it: $db by name, arguments quoted where the shell needs it.
step() {
    local shown=() argument
    for argument in "$@"; do
        if [ "$argument" = "$db" ]; then
            shown+=('"$db"')
        elif [ -n "${url:-}" ] && [ "$argument" = "$url" ]; then
            shown+=('"$url"')
        elif [ -n "${data:-}" ] && [ "$argument" = "$data" ]; then
            shown+=('"$data"')
        elif [ "$argument" = "${alice:-/}" ] || [ "$argument" = "${bob:-/}" ] || [ "$argument" = "${carol:-/}" ]; then
            shown+=("\"\$$(basename "$argument" .sqlite)\"")
        elif [[ "$argument" == "$workdir"/* ]]; then
            shown+=("\"\$workdir${argument#"$workdir"}\"")
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
        ostore-server) shift; "$server" "$@" ;;
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

note "Release 2.1 (the default) upgrades it: 2.0's stage backfills dueAt from dueDate and fills the search index; 2.1 adds shared lists."
show reminders --db "$db" list --json
show reminders --db "$db" list --search kitchen
show reminders --db "$db" list --search 'milk" OR title:*'
show reminders --db "$db" lists

note "Release 1.0 refuses the 2.1 file and leaves it alone (exit status 1, expected):"
show reminders --db "$db" --schema 1.0 list || echo "(exit status $?)"

note "The migration ledger, read by the ostore tool (no app code needed):"
show ostore status --db "$db"
show ostore check --db "$db"
printf '\nThe ledger records each stage once; values are bound, never interpolated, so the odd title is just a title.\n'

note "Sync: the reference server on embedded SQLite, on a free port of 127.0.0.1."
data="$workdir/server"
show ostore-server dataset create reminders --data "$data"
step ostore-server token create --dataset reminders --data "$data"
# The token goes into the environment (OSTORE_TOKEN), never onto a command line or the screen.
OSTORE_TOKEN=$("$server" token create --dataset reminders --data "$data" 2>/dev/null)
export OSTORE_TOKEN
"$server" serve --data "$data" --port 0 >"$workdir/server.out" 2>"$workdir/server.log" &
server_pid=$!
for _ in $(seq 100); do grep -q listening "$workdir/server.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$workdir/server.out")
echo "(server at $url, its request log in server.log)"
alice="$workdir/alice.sqlite" bob="$workdir/bob.sqlite" carol="$workdir/carol.sqlite"

note "Alice runs release 1.0, Bob 1.1: they sync together."
show reminders --db "$alice" --schema 1.0 add "Buy milk" --list Home --due 2024-05-01 >/dev/null
show reminders --db "$alice" --schema 1.0 sync --server "$url"
show reminders --db "$bob" --schema 1.1 sync --server "$url"
id=$("$reminders" --db "$bob" --schema 1.1 list --json | sed -n 's/.*"id": "\(.*\)".*/\1/p' | head -1)
show reminders --db "$bob" --schema 1.1 edit "$id" --priority 1
show reminders --db "$bob" --schema 1.1 sync --server "$url"

note "Alice (1.0) edits the title; the priority Bob set on 1.1 survives: 1.0 does not know it and never sends it."
show reminders --db "$alice" --schema 1.0 sync --server "$url"
show reminders --db "$alice" --schema 1.0 edit "$id" --title "Buy oat milk"
show reminders --db "$alice" --schema 1.0 sync --server "$url"
show reminders --db "$bob" --schema 1.1 sync --server "$url"
show reminders --db "$bob" --schema 1.1 list

note "Release 2 is out: the operator lets the dataset move to its major (a 2.x app is refused until then)."
show ostore-server dataset allow-major --dataset reminders 2 --data "$data"

note "Carol installs release 2.1: the dataset moves to schema 2.1; dueAt is derived from the deprecated dueDate."
show reminders --db "$carol" sync --server "$url"
show reminders --db "$carol" list --json

note "Bob, still on 1.1, moves the due date: the server tells him to upgrade, and his change stays queued."
show reminders --db "$bob" --schema 1.1 edit "$id" --due 2024-06-15
show reminders --db "$bob" --schema 1.1 sync --server "$url" || echo "(exit status $?)"
show reminders --db "$bob" --schema 1.1 status

note "Bob upgrades to 2.1: his queued change goes out, and Carol gets it."
show reminders --db "$bob" sync --server "$url"
show reminders --db "$carol" sync --server "$url"
show reminders --db "$carol" list

note "Alice upgrades to 2.1 too; Carol adds an Errands list. Everyone syncs."
show reminders --db "$carol" add "Post the letter" --list Errands >/dev/null
for peer in "$carol" "$alice" "$bob"; do show reminders --db "$peer" sync --server "$url"; done

note "Offline, at the same time: Bob and Carol retitle the same reminder (Carol a moment later); Alice deletes the Errands list while Bob adds a reminder to it."
show reminders --db "$bob" edit "$id" --title "Buy oat milk (Bob)"
show reminders --db "$carol" edit "$id" --title "Buy 2 litres of oat milk (Carol)"
show reminders --db "$alice" lists rm Errands
show reminders --db "$bob" add "Buy stamps" --list Errands >/dev/null

note "They sync in turn until nothing moves (the sync line shows the negotiation verdict)."
for round in 1 2 3 4 5 6; do
    moved=no
    for peer in "$bob" "$carol" "$alice"; do
        line=$(show reminders --db "$peer" sync --server "$url")
        printf '%s\n' "$line"
        case "$line" in *"pushed 0, pulled 0"*) ;; *) moved=yes ;; esac
    done
    [ "$moved" = no ] && break
done

# Each peer's reminders as "list: title", read with the sqlite3 shell, three columns side by side.
contents() {
    sqlite3 "$1" "SELECT l.name || ': ' || r.title FROM reminders r JOIN remindersLists l ON l.id = r.listID ORDER BY 1"
}
note "Side by side: the later title won on every device; the reminder added to the deleted list went with it (the orphan rule, Protocol/README.md §8.4)."
contents "$alice" >"$workdir/alice.txt"
contents "$bob" >"$workdir/bob.txt"
contents "$carol" >"$workdir/carol.txt"
echo
paste -d '|' "$workdir/alice.txt" "$workdir/bob.txt" "$workdir/carol.txt" |
    awk -F'|' 'BEGIN { printf "%-40s  %-40s  %s\n", "ALICE", "BOB", "CAROL" } { printf "%-40s  %-40s  %s\n", $1, $2, $3 }'
# Every synced table, row by row, hashed per peer.
fingerprint() {
    for table in remindersLists reminders tags reminderTags; do
        sqlite3 "$1" "SELECT * FROM \"$table\" ORDER BY 1, 2"
    done | sha256sum | cut -c1-16
}
a=$(fingerprint "$alice") b=$(fingerprint "$bob") c=$(fingerprint "$carol")
echo
echo "content fingerprints: alice $a, bob $b, carol $c"
if [ "$a" = "$b" ] && [ "$b" = "$c" ]; then
    echo "converged: the three devices hold the same lists, reminders and tags."
else
    echo "NOT converged" >&2
    exit 1
fi

note "Release 2.1 shares lists between users. A second dataset, family, is served under scope rules: each user reads only the lists they own or are a member of (Samples/reminders-rules.json)."
show ostore-server dataset create family --data "$data"
# One token per user, naming the user as its subject, each kept in a file of its own.
unset OSTORE_TOKEN
step ostore-server token create --dataset family --subject alice --data "$data"
for user in alice bob carol; do
    "$server" token create --dataset family --subject "$user" --data "$data" >"$workdir/$user.token" 2>/dev/null
done
echo '(three of them: for alice, bob and carol, in $workdir/alice.token, bob.token and carol.token)'
mkdir "$workdir/family"
alice="$workdir/family/alice.sqlite" bob="$workdir/family/bob.sqlite" carol="$workdir/family/carol.sqlite"
family() { show reminders --db "$1" sync --server "$url" --dataset family --token-file "$workdir/$2.token"; }
# The rules are checked against the schema the dataset's devices announce: Alice's first sync brings it.
family "$alice" alice
show ostore-server rules set --dataset family Samples/reminders-rules.json --data "$data"
printf '%s\n' "(a cursor issued before the rules is refused: Alice's next sync downloads her part again)"

note "Alice shares Groceries with Bob; Carol keeps a list of her own. Bob adds to Groceries."
show reminders --db "$alice" lists add Groceries --owner alice
show reminders --db "$alice" add "Milk" --list Groceries
show reminders --db "$alice" lists share Groceries --with bob
show reminders --db "$carol" lists add Garden --owner carol
show reminders --db "$carol" add "Plant the tulips" --list Garden
family "$alice" alice
family "$carol" carol
family "$bob" bob
bread=$("$reminders" --db "$bob" add "Bread" --list Groceries)
step reminders --db "$bob" add "Bread" --list Groceries
family "$bob" bob
family "$alice" alice
family "$carol" carol

note "Each device holds its user's part: Carol never sees Groceries, Alice and Bob never see Garden."
for peer in "$alice" "$bob" "$carol"; do show reminders --db "$peer" lists; done

note "Alice stops sharing Groceries with Bob. Bob, offline, retitles Bread after that."
show reminders --db "$alice" lists unshare Groceries --with bob
family "$alice" alice
show reminders --db "$bob" edit "$bread" --title "Rye bread"

note "Bob syncs: the server refuses his edit and he keeps it; Groceries leaves his device, no delete sent."
family "$bob" bob
show reminders --db "$bob" lists
show reminders --db "$bob" status
family "$alice" alice
show reminders --db "$alice" list

kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
printf '\nThe server logged one JSON line per request (%s lines), never a token.\n' "$(wc -l <"$workdir/server.log")"
