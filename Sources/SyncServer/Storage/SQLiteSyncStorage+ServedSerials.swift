import Foundation

/// A dataset whose log is shorter than when the server last ran on this data directory.
public struct RolledBackDataset: Sendable, Hashable {
    public var name: String
    /// The dataset's newest serial when the server last started or stopped.
    public var servedSerial: Int64
    /// Its newest serial now.
    public var lastSerial: Int64
}

extension SQLiteSyncStorage {
    /// Beside `server.sqlite`, outside it, so that putting an older copy of the database in place
    /// by hand does not take it back too: each dataset's newest serial when the server last started
    /// or stopped (JSON, dataset name to serial).
    public var servedSerialsPath: String { path + "-served" }

    /// What `ostore-server serve` runs before it serves: each dataset whose log is now shorter than
    /// the server last saw it (the file was copied back from a backup by hand) gets a new incarnation,
    /// so the cursors devices hold from before are refused instead of skipping the changes the
    /// server will number again. Then it remembers the serials as they are now.
    public func renewIncarnationsOfDatasetsThatWentBack() throws(ServerError) -> [RolledBackDataset] {
        let served = Self.readServedSerials(at: servedSerialsPath)
        let wentBack = try datasets().compactMap { dataset -> RolledBackDataset? in
            guard let before = served[dataset.name], dataset.changes < before else { return nil }
            return RolledBackDataset(name: dataset.name, servedSerial: before, lastSerial: dataset.changes)
        }
        if !wentBack.isEmpty { try renewIncarnations(of: Set(wentBack.map(\.name))) }
        try recordServedSerials()
        return wentBack
    }

    /// Remembers each dataset's newest serial in ``servedSerialsPath``; `ostore-server serve` calls it
    /// when it starts and when it stops.
    public func recordServedSerials() throws(ServerError) {
        let serials = Dictionary(uniqueKeysWithValues: try datasets().map { ($0.name, $0.changes) })
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            try encoder.encode(serials).write(to: URL(fileURLWithPath: servedSerialsPath), options: .atomic)
        } catch {
            throw ServerError(
                .storage, "cannot write \(servedSerialsPath): \(error)", fix: "check the data directory's permissions")
        }
    }

    /// A missing or unreadable file (a data directory of an earlier release) remembers nothing.
    private static func readServedSerials(at path: String) -> [String: Int64] {
        guard let data = FileManager.default.contents(atPath: path) else { return [:] }
        return (try? JSONDecoder().decode([String: Int64].self, from: data)) ?? [:]
    }
}
