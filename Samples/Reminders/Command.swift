import Foundation

/// What the user asked the tool to do, with its operands checked.
enum Command {
    /// `lists`
    case showLists
    /// `lists add NAME [--owner USER]`
    case addList(name: String, owner: String?)
    /// `lists share NAME --with USER` and `lists unshare NAME --with USER`
    case shareList(name: String, user: String, shares: Bool)
    /// `lists rm NAME`
    case removeList(name: String)
    /// `add TITLE [--list NAME] [--priority N] [--due YYYY-MM-DD] [--notes TEXT]`
    case addReminder(NewReminder)
    /// `list [--json] [--search TEXT]`
    case listReminders(ReminderListing)
    /// `edit ID [--title T] [--priority N] [--notes T] [--due DATE] [--done]`
    case editReminder(ReminderEdit)
    /// `rm ID`
    case removeReminder(id: String)
    /// `sync --server URL [--dataset NAME] [--token T | --token-file F]`
    case sync(SyncTarget)
    /// `daemon --server URL … [--interval S]`
    case daemon(SyncTarget, interval: Double)
    /// `status [--json]`
    case status(asJSON: Bool)
}

/// Where and as whom to sync. The token comes from `--token`, the `OSTORE_TOKEN` environment
/// variable or `--token-file` (so it need not appear in process lists); it is never printed.
struct SyncTarget {
    var server: URL
    var dataset: String
    var token: String
    /// A CA certificate file to trust (for a server with a self-signed certificate).
    var caFile: String?
}

/// The reminder `add` creates.
struct NewReminder {
    var title: String
    /// The list's name; created if no list has it.
    var listName: String
    var priority: Int?
    var due: DueDate?
    var notes: String?
}

/// The changes `edit` makes; nil leaves a column as it is.
struct ReminderEdit {
    var id: String
    var title: String?
    var priority: Int?
    var notes: String?
    var due: DueDate?
    var marksDone: Bool

    var changesSearchableText: Bool { title != nil || notes != nil }
}
