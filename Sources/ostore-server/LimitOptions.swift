import CommandLineTool
import SyncProtocol

/// The options of `ostore-server serve` that set the limits a hello states (Protocol/README.md,
/// section 12), each checked against the range the server can honour, with a message naming the
/// option and its range when it is outside.
///
/// ```swift
/// guard let limits = LimitOptions.limits(from: arguments) else { return .failure }
/// ```
enum LimitOptions {
    /// One option: its name, range and which limit it reads and sets; its default is that limit in
    /// ``Limits/standard``.
    struct Option: Sendable {
        let name: String
        let valueName: String
        let help: String
        let range: ClosedRange<Int64>
        let read: @Sendable (Limits) -> Int64
        let set: @Sendable (inout Limits, Int64) -> Void

        var defaultValue: Int64 { read(.standard) }

        var commandOption: CommandOption {
            CommandOption(
                name: name, valueName: valueName,
                help: "\(help) (default \(defaultValue); \(range.lowerBound) to \(range.upperBound))")
        }
    }

    static let all: [Option] = [
        Option(
            name: "--max-body-bytes", valueName: "N", help: "largest request body, before and after gunzip",
            range: 1024...1 << 30, read: { Int64($0.maxBodyBytes) }, set: { $0.maxBodyBytes = Int($1) }),
        Option(
            name: "--max-changes-per-push", valueName: "N", help: "most changes in one push", range: 1...100_000,
            read: { Int64($0.maxChangesPerPush) }, set: { $0.maxChangesPerPush = Int($1) }),
        Option(
            name: "--max-changes-per-pull", valueName: "N", help: "most changes in one pull page", range: 1...100_000,
            read: { Int64($0.maxChangesPerPull) }, set: { $0.maxChangesPerPull = Int($1) }),
        Option(
            name: "--max-clock-drift", valueName: "S",
            help: "how many seconds a change's clock may be ahead of the "
                + "server's", range: 0...86_400, read: { $0.maxClockDriftMilliseconds / 1000 },
            set: { $0.maxClockDriftMilliseconds = $1 * 1000 }),
        Option(
            name: "--max-identifier-length", valueName: "N", help: "longest table or column name", range: 1...1024,
            read: { Int64($0.maxIdentifierLength) }, set: { $0.maxIdentifierLength = Int($1) }),
        Option(
            name: "--max-nesting-depth", valueName: "N", help: "deepest nesting of arrays and objects in a request",
            range: 8...256, read: { Int64($0.maxNestingDepth) }, set: { $0.maxNestingDepth = Int($1) }),
        Option(
            name: "--max-pushes-in-flight", valueName: "N",
            help: "pushes of one site a client may have sent and not had answered", range: 1...64,
            read: { Int64($0.pushesInFlight) }, set: { $0.maxPushesInFlight = Int($1) }),
        Option(
            name: "--max-pull-wait", valueName: "S",
            help: "seconds a live pull may wait for a change (0: pulls never wait)", range: 0...300,
            read: { Int64($0.maxPullWaitMilliseconds ?? 0) / 1000 },
            set: { $0.maxPullWaitMilliseconds = Int($1) * 1000 }),
    ]

    static var commandOptions: [CommandOption] { all.map(\.commandOption) }

    /// The limits the options give (the defaults for those not given); nil after printing which
    /// option is out of its range.
    static func limits(from arguments: ParsedArguments) -> Limits? {
        var limits = Limits.standard
        for option in all {
            guard let text = arguments.values[option.name] else { continue }
            guard let value = Int64(text), option.range.contains(value) else {
                Console.error(
                    "ostore-server serve: \(option.name) takes a whole number from \(option.range.lowerBound) to "
                        + "\(option.range.upperBound), not \(text.prefix(40).debugDescription)")
                return nil
            }
            option.set(&limits, value)
        }
        return limits
    }
}
