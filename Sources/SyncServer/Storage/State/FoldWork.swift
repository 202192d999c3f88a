import Foundation

/// The changes of one fold and the order they are merged in: by dataset, table and key (the
/// state's primary key, in SQLite's byte order, so neighbouring rows share pages), and one row's
/// changes by serial (log order, as each push merged its own when it merged them itself).
///
/// The changes stay in the arrays they were handed over in; the sort moves small plain items
/// (dataset, the table's rank, eight bytes of the key from where the fold's keys start to differ,
/// serial) and compares whole keys only when those eight bytes tie. Sorting the changes
/// themselves, strings compared and retained along the way, was a quarter of a fold's CPU.
///
/// ```swift
/// var work = FoldWork()
/// work.add(run.changes, firstSerial: run.firstSerial, datasetID: id)
/// try work.forEachRow { datasetID, changes in try merge(changes, datasetID: datasetID) }
/// ```
struct FoldWork {
    private struct Item {
        var datasetID: Int64
        /// The rank of the change's table name in byte order among the fold's tables.
        var table: Int32
        /// Eight bytes of the key from the fold's common prefix on, big-endian, zero-padded (a
        /// key's JSON has no NUL byte, so a shorter key still sorts first).
        var keyPrefix: UInt64
        var serial: Int64
        var source: Int32
        var index: Int
    }

    private var sources: [ArraySlice<FoldChange>] = []
    private var items: [Item] = []

    /// Adds `changes`, whose serials run from `firstSerial` on.
    mutating func add(_ changes: ArraySlice<FoldChange>, firstSerial: Int64, datasetID: Int64) {
        let source = Int32(sources.count)
        sources.append(changes)
        items.reserveCapacity(items.count + changes.count)
        var serial = firstSerial
        for index in changes.indices {
            items.append(
                Item(datasetID: datasetID, table: 0, keyPrefix: 0, serial: serial, source: source, index: index))
            serial += 1
        }
    }

    /// Calls `body` once per row, in key order, with the row's changes in log order and their
    /// serials.
    mutating func forEachRow(
        _ body: (_ datasetID: Int64, _ changes: [FoldChange], _ serials: [Int64]) throws -> Void
    ) throws {
        rankTables()
        readKeyPrefixes()
        let sources = self.sources
        items.sort { a, b in
            if a.datasetID != b.datasetID { return a.datasetID < b.datasetID }
            if a.table != b.table { return a.table < b.table }
            if a.keyPrefix != b.keyPrefix { return a.keyPrefix < b.keyPrefix }
            let order = Self.compareBytes(
                sources[Int(a.source)][a.index].key, sources[Int(b.source)][b.index].key)
            return order != 0 ? order < 0 : a.serial < b.serial
        }
        var row: [FoldChange] = []
        var serials: [Int64] = []
        var first = items.startIndex
        while first < items.endIndex {
            let item = items[first]
            row.removeAll(keepingCapacity: true)
            serials.removeAll(keepingCapacity: true)
            row.append(sources[Int(item.source)][item.index])
            serials.append(item.serial)
            var next = first + 1
            while next < items.endIndex, items[next].datasetID == item.datasetID, items[next].table == item.table,
                items[next].keyPrefix == item.keyPrefix,
                // Bytes, as the sort and the state's key compare them: `==` on strings would take
                // two spellings of one character (composed, decomposed) for one row.
                Self.compareBytes(sources[Int(items[next].source)][items[next].index].key, row[0].key) == 0
            {
                row.append(sources[Int(items[next].source)][items[next].index])
                serials.append(items[next].serial)
                next += 1
            }
            try body(item.datasetID, row, serials)
            first = next
        }
    }

    // The one field each pass reads, not a copy of the whole change (four references retained
    // and released).
    private func table(_ item: Item) -> String {
        sources[Int(item.source)][item.index].table
    }

    private func key(_ item: Item) -> String {
        sources[Int(item.source)][item.index].key
    }

    /// Numbers the tables by byte order of their names (a fold has a few tables, and a run of
    /// changes mostly one).
    private mutating func rankTables() {
        // By the names' bytes, as the state's key compares them (not `String`'s equality).
        var ordinals: [[UInt8]: Int32] = [:]
        var last: (table: String, ordinal: Int32)?
        for position in items.indices {
            let name = table(items[position])
            if last.map({ Self.compareBytes($0.table, name) != 0 }) ?? true {
                let bytes = Array(name.utf8)
                let ordinal = ordinals[bytes] ?? Int32(ordinals.count)
                ordinals[bytes] = ordinal
                last = (name, ordinal)
            }
            items[position].table = last!.ordinal
        }
        var ranks = [Int32](repeating: 0, count: ordinals.count)
        for (rank, (_, ordinal)) in ordinals.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }).enumerated() {
            ranks[Int(ordinal)] = Int32(rank)
        }
        for position in items.indices { items[position].table = ranks[Int(items[position].table)] }
    }

    /// Sets each item's ``Item/keyPrefix`` from the first byte where the fold's keys differ:
    /// keys are JSON objects that mostly start alike (`{"id":{"text":"`).
    private mutating func readKeyPrefixes() {
        guard let firstItem = items.first else { return }
        var reference = Array(key(firstItem).utf8)
        var common = reference.count
        for item in items {
            var text = key(item)
            text.withUTF8 { bytes in
                var matching = 0
                let limit = min(common, bytes.count)
                while matching < limit, bytes[matching] == reference[matching] { matching += 1 }
                common = matching
            }
        }
        reference = []
        for position in items.indices {
            var text = key(items[position])
            items[position].keyPrefix = text.withUTF8 { bytes in
                var prefix: UInt64 = 0
                for offset in common..<(common + 8) {
                    prefix = prefix << 8 | UInt64(offset < bytes.count ? bytes[offset] : 0)
                }
                return prefix
            }
        }
    }

    /// memcmp order of the UTF-8 bytes, shorter first on a tie: SQLite's BINARY collation.
    private static func compareBytes(_ lhs: String, _ rhs: String) -> Int {
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { left in
            rhs.withUTF8 { right in
                let count = min(left.count, right.count)
                let order = count == 0 ? 0 : memcmp(left.baseAddress!, right.baseAddress!, count)
                return order != 0 ? Int(order) : left.count - right.count
            }
        }
    }
}
