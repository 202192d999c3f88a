import Foundation
import SyncProtocol

extension MergedRow {
    /// A row's cells by column name, kept in byte order of the names: the order the packed record
    /// stores them in and the order a ``FoldChange`` lists its columns in, so reading a record,
    /// merging a new row's insert and packing the result append and walk, with no hashing and no
    /// sort (a row has a handful of columns; a dictionary of them cost a fold more than SQLite's
    /// write of the row).
    ///
    /// ```swift
    /// var cells: MergedRow.Cells = [:]
    /// cells["title"] = MergedRow.Cell(value: .text("Oat milk"), version: version)
    /// ```
    struct Cells: Equatable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
        private var entries: [(name: String, cell: Cell)] = []

        init(dictionaryLiteral elements: (String, Cell)...) {
            for (name, cell) in elements { self[name] = cell }
        }

        mutating func reserveCapacity(_ count: Int) {
            entries.reserveCapacity(count)
        }

        /// Gives the cells whose version `isRedated` picks the version `new`.
        mutating func redate(to new: ChangeVersion, where isRedated: (ChangeVersion) -> Bool) {
            for index in entries.indices where isRedated(entries[index].cell.version) {
                entries[index].cell.version = new
            }
        }

        mutating func removeAll(where shouldBeRemoved: (Cell) -> Bool) {
            entries.removeAll { shouldBeRemoved($0.cell) }
        }

        var isEmpty: Bool { entries.isEmpty }
        var count: Int { entries.count }

        /// The cell of column `name`; setting nil removes it.
        subscript(name: String) -> Cell? {
            get {
                let (index, found) = position(of: name)
                return found ? entries[index].cell : nil
            }
            set {
                let (index, found) = position(of: name)
                switch (found, newValue) {
                case (true, let cell?): entries[index].cell = cell
                case (true, nil): entries.remove(at: index)
                case (false, let cell?) where index == entries.count: entries.append((name, cell))
                case (false, let cell?): entries.insert((name, cell), at: index)
                case (false, nil): break
                }
            }
        }

        /// Where `name` is, or where it would go. Checks the end first: cells read from a record
        /// or written by an insert come in byte order, each after the last.
        private func position(of name: String) -> (index: Int, found: Bool) {
            guard let last = entries.last else { return (0, false) }
            if Self.same(last.name, name) { return (entries.count - 1, true) }
            if Self.precedes(last.name, name) { return (entries.count, false) }
            var low = 0
            var high = entries.count - 1
            while low < high {
                let middle = (low + high) / 2
                if Self.precedes(entries[middle].name, name) { low = middle + 1 } else { high = middle }
            }
            return (low, Self.same(entries[low].name, name))
        }

        /// The same UTF-8 bytes: names are told apart as SQLite tells them apart, not by `String`'s
        /// equality (which takes two spellings of one character, composed and decomposed, for one).
        static func same(_ lhs: String, _ rhs: String) -> Bool {
            lhs.utf8.elementsEqual(rhs.utf8)
        }

        /// Byte order of the UTF-8 names, as SQLite's BINARY collation sorted the cells of schema 1.2.
        static func precedes(_ lhs: String, _ rhs: String) -> Bool {
            lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
        }

        func makeIterator() -> IndexingIterator<[(name: String, cell: Cell)]> {
            entries.makeIterator()
        }

        static func == (lhs: Cells, rhs: Cells) -> Bool {
            lhs.entries.elementsEqual(rhs.entries) { same($0.name, $1.name) && $0.cell == $1.cell }
        }
    }
}
