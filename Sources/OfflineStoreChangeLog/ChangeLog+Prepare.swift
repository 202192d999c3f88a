import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// Does the part of applying `changes` that needs no database (see ``PreparedChanges``), on
    /// the calling thread: any thread, with no connection and no lock. ``apply(_:to:alongside:)``
    /// and ``apply(preparedBatches:to:afterEach:)`` take the result.
    ///
    /// `leaving`: the rows the page names as having left the scope (``LeavingRows``), removed
    /// before its changes apply. `replacing`: the page belongs to a download that replaces what
    /// the store holds (``ReplacingDownloadPage``).
    ///
    /// ```swift
    /// let prepared = log.prepare(page.changes)  // where the page was read
    /// let outcome = try log.apply(prepared, to: db)
    /// ```
    package func prepare(
        _ changes: [IncomingChange], leaving: LeavingRows? = nil, replacing: ReplacingDownloadPage? = nil
    ) -> PreparedChanges {
        var tables: [TableShape] = []
        // By the name a change gives, then by the declared name: names that differ in case find
        // one table.
        var places: [String: Int?] = [:]
        var placesByDeclaredName: [String: Int] = [:]
        var last: (name: String, place: Int?)?
        var plans: [ChangePlan] = []
        plans.reserveCapacity(changes.count)
        var slots = [Int?](repeating: nil, count: changes.count)
        var pageKeys: [(table: String, keys: PageKeys)] = []
        var pageKeysByTable: [String: Int] = [:]
        var lastKeys: (table: String, keys: PageKeys)?
        var repeated: [Bool] = []
        // The page's sites, each once: its changes mostly come from few sites, in runs.
        var sites: [Data] = []
        var sitePlaces: [Data: Int] = [:]
        var lastSite: (id: Data, place: Int)?
        for index in changes.indices {
            let change = changes[index]
            let place: Int?
            if let last, last.name == change.table {
                place = last.place
            } else if let known = places[change.table] {
                place = known
            } else {
                if let definition = schema.table(named: change.table), definition.sync == .synced {
                    if let known = placesByDeclaredName[definition.name] {
                        place = known
                    } else {
                        tables.append(TableShape(definition))
                        place = tables.count - 1
                        placesByDeclaredName[definition.name] = place
                    }
                } else {
                    place = nil
                }
                places[change.table] = place
            }
            last = (change.table, place)
            let site: Int
            if let lastSite, lastSite.id == change.siteID {
                site = lastSite.place
            } else if let known = sitePlaces[change.siteID] {
                site = known
            } else {
                site = sites.count
                sites.append(change.siteID)
                sitePlaces[change.siteID] = site
            }
            lastSite = (change.siteID, site)
            var plan = ChangePlan(refusedBeforeClock: Self.refusalBeforeClock(change), table: place, site: site)
            guard let place else {
                plans.append(plan)
                continue
            }
            let shape = tables[place]
            // A key that fails leaves `loggedKey` NULL: no slot below.
            do throws(ChangeLogError) {
                let keyValues = try Self.keyValues(
                    of: change, keyColumns: shape.keyColumns, table: shape.definition.name)
                try Self.checkStrictKey(keyValues, in: shape)
                plan.keyValues = keyValues
                plan.loggedKey = Self.loggedKey(plan.keyValues)
                (plan.known, plan.unknown) = try Self.valuesByPosition(change, in: shape)
                for (position, value) in zip(shape.keyPositions, plan.keyValues) { plan.known[position] = value }
            } catch {
                plan.refused = error
            }
            // Only keys the log stores as plain ASCII JSON text are read together (see
            // ``readPageLog(_:_:)``); the others read their row when applied.
            if case .text(let key) = plan.loggedKey, let hash = PageKeys.hash(ifPlainJSONText: key) {
                let name = shape.definition.name
                let keys: PageKeys
                if let lastKeys, lastKeys.table == name {
                    keys = lastKeys.keys
                } else if let known = pageKeysByTable[name] {
                    keys = pageKeys[known].keys
                } else {
                    keys = PageKeys(capacity: changes.count)
                    pageKeysByTable[name] = pageKeys.count
                    pageKeys.append((name, keys))
                }
                lastKeys = (name, keys)
                let slot = keys.slot(of: key, hash: hash, next: repeated.count)
                if slot == repeated.count {
                    repeated.append(false)
                } else {
                    repeated[slot] = true
                }
                slots[index] = slot
            }
            plans.append(plan)
        }
        return PreparedChanges(
            changes: changes, schema: schema, tables: tables, sites: sites, plans: plans,
            rows: PageRows(
                slots: slots, repeated: repeated,
                keys: pageKeys.map { PageRows.Keys(table: $0.table, json: $0.keys.json(), slots: $0.keys.slots) }),
            leaving: leaving, replacing: replacing)
    }

    /// Why a change is refused before anything of it is looked up: a site id that is not 16
    /// bytes, or a name that is not a plain identifier (so nothing odd is ever stashed or echoed
    /// in a message).
    private static func refusalBeforeClock(_ change: IncomingChange) -> ChangeLogError? {
        guard change.siteID.count == 16 else {
            return ChangeLogError(
                .invalidChange, table: change.table, "the site id is \(change.siteID.count) bytes, not 16")
        }
        let isOdd = { (name: String) in !ChangeValidation.isPlainIdentifier(name) }
        guard
            let odd = isOdd(change.table)
                ? change.table : change.primaryKey.keys.first(where: isOdd) ?? change.columns.keys.first(where: isOdd)
        else { return nil }
        return ChangeLogError(
            .invalidChange, table: change.table,
            "\(odd.debugDescription) is not a plain SQL identifier (letters, digits, underscores)")
    }

    /// A STRICT table's key takes only its columns' classes (``StrictColumnRule``), as the server
    /// checks (Protocol/README.md, section 5.2): SQLite itself would store an integer given for a
    /// TEXT key as text, and match it against a text key, so this store would key the row
    /// otherwise than the server and every other store.
    private static func checkStrictKey(_ keyValues: [DatabaseValue], in shape: TableShape) throws(ChangeLogError) {
        guard shape.isStrict else { return }
        for (position, value) in zip(shape.keyPositions, keyValues) where !shape.accepts(value, at: position) {
            throw ChangeLogError(
                .invalidChange, table: shape.definition.name,
                "key column \(shape.definition.columns[position].name) is \(shape.columnTypes[position]) in a STRICT "
                    + "table; the change carries \(value.storageClass)")
        }
    }

    /// The change's values by the table's column positions (a name matched as SQLite matches
    /// names), and the values of names this schema does not know, which wait in the stash.
    private static func valuesByPosition(_ change: IncomingChange, in shape: TableShape) throws(ChangeLogError) -> (
        known: [DatabaseValue?], unknown: [String: DatabaseValue]
    ) {
        let table = shape.definition
        var known = [DatabaseValue?](repeating: nil, count: table.columns.count)
        var unknown: [String: DatabaseValue] = [:]
        for (name, value) in change.columns {
            if let position = shape.position(of: name) {
                // Two names of one column (`listID` and `listid`): which one SQLite writes and
                // which one the orphan search reads would be a matter of dictionary order.
                guard known[position] == nil else {
                    throw ChangeLogError(
                        .invalidChange, table: table.name,
                        "the change names column \(table.columns[position].name) twice (names differ only in case)")
                }
                if shape.isStrict, !shape.accepts(value, at: position) {
                    throw ChangeLogError(
                        .invalidChange, table: table.name,
                        "column \(table.columns[position].name) is \(shape.columnTypes[position]) in a STRICT table; the change carries \(value.storageClass)"
                    )
                }
                known[position] = value
            } else {
                unknown[name] = value
            }
        }
        return (known, unknown)
    }
}

/// The distinct keys of one table's changes in a page, each with its row's slot in a ``PageLog``:
/// an open-addressing table on a hash of the key's bytes (a `Dictionary` of `String` would make
/// and hash a `String` per key), and the JSON array ``ChangeLog/readPageLog(_:_:)``
/// binds. Used by one ``ChangeLog/prepare(_:)`` call, on its thread.
private final class PageKeys {
    // Touched for every change of a page, by one preparation at a time: accesses never overlap,
    // so they go without dynamic exclusivity checks.
    /// The keys in the order they were met, and each one's slot.
    @exclusivity(unchecked) private(set) var keys: [String] = []
    @exclusivity(unchecked) private(set) var slots: [Int] = []
    @exclusivity(unchecked) private var hashes: [UInt64] = []
    /// Places in ``keys`` plus one, 0 for none; twice as many as there can be keys.
    @exclusivity(unchecked) private var buckets: [Int32]

    init(capacity: Int) {
        var size = 16
        while size < capacity * 2 { size *= 2 }
        buckets = [Int32](repeating: 0, count: size)
        keys.reserveCapacity(capacity)
        slots.reserveCapacity(capacity)
        hashes.reserveCapacity(capacity)
    }

    /// FNV-1a of the key's bytes, or nil unless they are printable ASCII other than `"` and `\`:
    /// the bytes of a JSON string's content, compared by SQLite as by Swift.
    static func hash(ifPlainJSONText key: String) -> UInt64? {
        var key = key
        return key.withUTF8 { bytes -> UInt64? in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes {
                guard byte >= 0x20, byte < 0x7F, byte != 0x22, byte != 0x5C else { return nil }
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            }
            return hash
        }
    }

    /// The slot of `key`, or `next` when the key is new (it then takes it).
    func slot(of key: String, hash: UInt64, next: Int) -> Int {
        let mask = buckets.count - 1
        var bucket = Int(truncatingIfNeeded: hash ^ (hash >> 29)) & mask
        while buckets[bucket] != 0 {
            let place = Int(buckets[bucket]) - 1
            if hashes[place] == hash, keys[place] == key { return slots[place] }
            bucket = (bucket + 1) & mask
        }
        keys.append(key)
        slots.append(next)
        hashes.append(hash)
        buckets[bucket] = Int32(keys.count)
        return next
    }

    /// `["key1","key2",…]`, the keys as they are (``hash(ifPlainJSONText:)`` let only such keys in).
    func json() -> String {
        var json: [UInt8] = [UInt8(ascii: "[")]
        json.reserveCapacity(keys.reduce(2) { $0 + $1.utf8.count + 3 })
        for (place, key) in keys.enumerated() {
            if place > 0 { json.append(UInt8(ascii: ",")) }
            json.append(UInt8(ascii: "\""))
            json.append(contentsOf: key.utf8)
            json.append(UInt8(ascii: "\""))
        }
        json.append(UInt8(ascii: "]"))
        return String(decoding: json, as: UTF8.self)
    }
}
