/// The text `reminders --help` prints.
enum Usage {
    static let text = """
        usage: reminders --db PATH [--schema VERSION] COMMAND [OPTIONS]

        A small offline-first reminders app on OfflineStore. Each run acts as one release of the
        app: --schema 1.0, 1.1, 2.0 or 2.1 (default: 2.1, the latest). Opening the database
        creates it, or upgrades it to that release's schema with the app's migration plan; a file
        that a newer release has already upgraded is refused and left unmodified.

        commands:
          lists                       the lists: id, number of reminders, (2.1) owner and the
                                      users it is shared with, name
          lists add NAME [--owner USER]
                                      create a list; prints its id alone on a line. --owner: the
                                      user who owns it, as the server's tokens name users (2.1)
          lists rm NAME               delete the list and the reminders in it
          lists share NAME --with USER
          lists unshare NAME --with USER
                                      let USER see and change the list's reminders, or no longer
                                      (2.1; a server with scope rules enforces it)
          add TITLE [--list NAME] [--priority N] [--due YYYY-MM-DD] [--notes TEXT]
                                      create a reminder; prints its id alone on a line.
                                      --list NAME  the list with that name, created if there
                                                   is none (default: "Inbox", created if needed)
                                      --priority N 0 to 9 (schema 1.1 or later)
                                      --notes TEXT (schema 1.1 or later)
                                      --due DATE   a real date, YYYY-MM-DD (stored in dueDate,
                                                   and from 2.0 also in dueAt)
          list [--json] [--search TEXT]
                                      the reminders, oldest first, as a table; --json prints
                                      every column of the reminders table (keys sorted, NULL as
                                      null); --search finds TEXT as a phrase in titles and notes,
                                      best match first (schema 2.0 or later)
          edit ID [--title TEXT] [--priority N] [--notes TEXT] [--due YYYY-MM-DD] [--done]
                                      change a reminder (--priority and --notes: schema 1.1 or later)
          rm ID                       delete a reminder (and its tags)
          sync --server URL [--dataset NAME] [--token TOKEN | --token-file FILE] [--ca-file FILE]
                                      push this database's changes to an ostore-server and pull
                                      everyone else's (dataset: "reminders" by default). The token
                                      may also come from the OSTORE_TOKEN environment variable; it
                                      is never printed. --ca-file trusts a certificate (HTTPS)
          daemon --server URL … [--interval S]
                                      sync every S seconds (default 30) and a moment after local
                                      changes, backing off while the server is unreachable, until
                                      SIGTERM or SIGINT; one line per sync on stdout
          status [--json]             changes waiting to be pushed, each server's last sync and
                                      error, negotiated versions, changes the server refused,
                                      changes from other devices kept for later or refused here

        options:
          --db PATH                   the database file (created if missing)
          --schema VERSION            the app release to act as: 1.0, 1.1, 2.0 or 2.1
          -h, --help                  print this help
          --version                   print the release, its sync protocol versions and schema releases

        Options may come before or after the command; `--` ends them, for a TITLE or NAME that
        starts with "-". Errors go to stderr. While a slow upgrade runs, a progress line is shown
        on stderr when it is a terminal.

        exit status:
          0  success
          1  runtime error: no such reminder, a database from a newer release, a failed migration
          2  usage error: the command line is wrong (nothing was opened or changed)
        """
}
