import CommandLineTool
import Foundation
import SyncServer

/// `ostore-server cursor-keys rotate`: a new key for signing pull cursors, the ones older than the
/// previous key dropped.
enum CursorKeysCommand: Command {
    static let name = "cursor-keys"
    static let synopsis = "rotate [--data DIR | --postgres URL]"
    static let summary = "Add a new key for signing pull cursors and drop the keys older than the one before it."
    static let options = StorageLocation.options
    static let details = """
        Pull cursors are signed (HMAC-SHA256) with keys kept in the storage, made on first need and never
        printed. rotate adds a key: every server signs with it once it has read it (within a minute, or as
        soon as a cursor signed with it reaches that server), still accepts the cursors of the key before
        it, and refuses those of the older keys, which rotate drops: a device holding such a cursor
        downloads its dataset again on its next sync. Two rotations in a row therefore refuse every cursor
        issued before the first. The servers may be running meanwhile.

        exit status: 0 rotated, 2 usage or storage error
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        guard arguments.positionals == ["rotate"] else {
            Console.error("usage: ostore-server cursor-keys \(synopsis)")
            return .failure
        }
        guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
        do {
            let rotation = try storage.rotateCursorKeys()
            var report = "added cursor key \(rotation.added)"
            if let previous = rotation.previous {
                report += "; cursors signed with key \(previous) stay valid until the next rotation"
            }
            if !rotation.dropped.isEmpty {
                report +=
                    "; dropped key \(rotation.dropped.map(String.init).joined(separator: ", ")): its cursors are refused"
            }
            Console.output(report)
            return .success
        } catch {
            Console.error("ostore-server cursor-keys rotate: \(error)")
            return .failure
        }
    }
}
