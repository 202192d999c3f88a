import Foundation

/// One side of a comparison: `setUp` and `tearDown` run outside the clock (copying a file,
/// opening and closing a connection), `body` inside it.
struct TimedSide {
    var setUp: () throws -> Void = {}
    var body: () throws -> Void
    var tearDown: () throws -> Void = {}
}

/// Runs every side once untimed (caches, allocator, page cache of the input file), then `runs`
/// timed rounds in which the sides take turns, so a slow phase of the machine hits them alike.
/// Each round starts with the next side: going first (or right after another side's file was
/// written back) then favours none of them.
func sampleAlternating(runs: Int, _ sides: [TimedSide]) throws -> [TimingSummary] {
    let clock = ContinuousClock()
    for side in sides {
        try side.setUp()
        try side.body()
        try side.tearDown()
    }
    var samples = Array(repeating: [Double](), count: sides.count)
    for round in 0..<runs {
        for turn in sides.indices {
            let index = (round + turn) % sides.count
            let side = sides[index]
            try side.setUp()
            let start = clock.now
            try side.body()
            let elapsed = clock.now - start
            try side.tearDown()
            let (seconds, attoseconds) = elapsed.components
            samples[index].append(Double(seconds) * 1000 + Double(attoseconds) / 1e15)
        }
    }
    return samples.map(TimingSummary.init)
}
