import Foundation
import SyncProtocol

/// The `cells` column of `state_rows` (`server_rows` before): a row's cells in one compact blob, so that merging a
/// change rewrites one record instead of one per column.
///
/// Layout (all integers little-endian): a format byte (1), then each cell in byte order of its
/// column name: the name's length (varint) and UTF-8 bytes; a tag byte, whose low bits are the
/// value's storage class (0 null, 1 integer, 2 real, 3 text, 4 blob) and whose high bit says the
/// cell has a version of its own (otherwise it was written by the row's creation, the common case,
/// and the version is not repeated); the value (an integer zigzag varint, a real's 8 bytes, a text's
/// or blob's length as a varint then its bytes); with the high bit, the clock's 8 bytes and the
/// site's length (varint) and bytes. A row without cells stores NULL.
///
/// ```swift
/// let row = try MergedRow(created: created, deleted: nil, packedCells: blob)
/// blob = row.packedCells
/// ```
extension MergedRow {
    static let packingFormat: UInt8 = 1
    private static let ownVersionFlag: UInt8 = 0x80

    /// The cells as `state_rows.cells` stores them; nil when the row has none.
    var packedCells: Data? {
        guard !cells.isEmpty else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16 + cells.count * 48)
        bytes.append(Self.packingFormat)
        let created = self.created
        // ``Cells`` keeps them in byte order of the names.
        for (name, cell) in cells {
            let isCreation = created.map { $0.clock == cell.version.clock && $0.site == cell.version.site } ?? false
            Self.appendCell(name: name, value: cell.value, ownVersion: isCreation ? nil : cell.version, to: &bytes)
        }
        return Data(bytes)
    }

    /// What ``packedCells`` is for the row that `insert` alone creates (`MergedRow()` merged with
    /// it), packed straight from its columns into `bytes` (emptied first): a fold's commonest
    /// row, a new one, without building and tearing down its cells. False when that row has no
    /// cells (`packedCells` nil).
    static func packCellsOfRow(createdBy insert: FoldChange, into bytes: inout [UInt8]) -> Bool {
        bytes.removeAll(keepingCapacity: true)
        // The merge rule writes no column of an insert older than every version (a clock that packs
        // below 0), as ``merge(_:)`` asks it.
        let empty = MergeRule.Row(created: nil, deleted: nil)
        guard !insert.columns.isEmpty, MergeRule.writesColumn(at: insert.version, over: nil, row: empty) else {
            return false
        }
        bytes.append(packingFormat)
        // The change lists its columns in ``Cells``' order, each written by the row's creation.
        for (name, value) in insert.columns { appendCell(name: name, value: value, ownVersion: nil, to: &bytes) }
        return true
    }

    /// One cell in the layout above; `ownVersion` nil for a cell the row's creation wrote.
    private static func appendCell(name: String, value: WireValue, ownVersion: ChangeVersion?, to bytes: inout [UInt8])
    {
        appendText(name, to: &bytes)
        let flag: UInt8 = ownVersion == nil ? 0 : ownVersionFlag
        switch value {
        case .null:
            bytes.append(0 | flag)
        case .integer(let integer):
            bytes.append(1 | flag)
            appendVarint(UInt64(bitPattern: (integer << 1) ^ (integer >> 63)), to: &bytes)
        case .real(let real):
            bytes.append(2 | flag)
            appendFixed(real.bitPattern, to: &bytes)
        case .text(let text):
            bytes.append(3 | flag)
            appendText(text, to: &bytes)
        case .blob(let data):
            bytes.append(4 | flag)
            appendVarint(UInt64(data.count), to: &bytes)
            bytes.append(contentsOf: data)
        }
        if let ownVersion {
            appendFixed(UInt64(bitPattern: ownVersion.clock), to: &bytes)
            appendVarint(UInt64(ownVersion.site.count), to: &bytes)
            bytes.append(contentsOf: ownVersion.site)
        }
    }

    /// A row as read from `state_rows`; throws when `packedCells` is not a blob this release wrote.
    init(created: ChangeVersion?, deleted: ChangeVersion?, packedCells: Data?) throws(ServerError) {
        self.created = created
        self.deleted = deleted
        guard let packedCells else { return }
        var reader = Reader(bytes: [UInt8](packedCells))
        guard reader.byte() == Self.packingFormat else {
            throw Self.unreadable("its format byte is \(packedCells.first.map(String.init) ?? "missing")")
        }
        while !reader.isAtEnd {
            guard let nameLength = reader.varint(), let name = reader.take(nameLength), let tag = reader.byte()
            else { throw Self.unreadable("a cell is cut short") }
            let value: WireValue
            switch tag & ~Self.ownVersionFlag {
            case 0: value = .null
            case 1:
                guard let zigzag = reader.varint() else { throw Self.unreadable("an integer is cut short") }
                value = .integer(Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1))))
            case 2:
                guard let bits = reader.fixed() else { throw Self.unreadable("a real is cut short") }
                value = .real(Double(bitPattern: bits))
            case 3:
                guard let length = reader.varint(), let text = reader.take(length) else {
                    throw Self.unreadable("a text is cut short")
                }
                value = .text(String(decoding: text, as: UTF8.self))
            case 4:
                guard let length = reader.varint(), let blob = reader.take(length) else {
                    throw Self.unreadable("a blob is cut short")
                }
                value = .blob(Data(blob))
            default:
                throw Self.unreadable("a cell has the unknown tag \(tag)")
            }
            let version: ChangeVersion
            if tag & Self.ownVersionFlag != 0 {
                guard let clock = reader.fixed(), let siteLength = reader.varint(), let site = reader.take(siteLength)
                else { throw Self.unreadable("a cell's version is cut short") }
                version = ChangeVersion(clock: Int64(bitPattern: clock), site: Data(site))
            } else if let created {
                version = created
            } else {
                throw Self.unreadable("a cell refers to the creation of a row never inserted")
            }
            cells[String(decoding: name, as: UTF8.self)] = Cell(value: value, version: version)
        }
    }

    private static func unreadable(_ detail: String) -> ServerError {
        ServerError(
            .storage, "a row of state_rows has cells this release cannot read (\(detail))",
            fix: "restore the data directory from a backup, or run the ostore-server release that wrote it")
    }

    /// The text's length (varint) and UTF-8 bytes, copied as one buffer: appending the `utf8`
    /// view went byte by byte, a third of the packing.
    private static func appendText(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { utf8 in
            appendVarint(UInt64(utf8.count), to: &bytes)
            bytes.append(contentsOf: utf8)
        }
    }

    private static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private static func appendFixed(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Reads the layout front to back; every read returns nil past the end.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var isAtEnd: Bool { offset >= bytes.count }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while let byte = byte() {
                guard shift < 64 else { return nil }
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }

        mutating func fixed() -> UInt64? {
            guard let slice = take(8) else { return nil }
            return slice.reversed().reduce(0) { ($0 << 8) | UInt64($1) }
        }

        mutating func take(_ count: UInt64) -> ArraySlice<UInt8>? {
            guard count <= UInt64(bytes.count - offset) else { return nil }
            defer { offset += Int(count) }
            return bytes[offset..<(offset + Int(count))]
        }
    }
}
