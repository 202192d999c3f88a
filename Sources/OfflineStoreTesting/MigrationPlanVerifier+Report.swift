import Foundation

extension MigrationPlanVerifier {
    /// What ``MigrationPlanVerifier/verify()`` found: every problem of every scenario, and the
    /// scenarios it ran. Its description is a readable numbered list, ready for a test failure.
    ///
    /// ```swift
    /// let report = try MigrationPlanVerifier(plan: RemindersMigrationPlan.self).verify()
    /// #expect(report.problems.isEmpty, "\(report)")
    /// #expect(report.scenariosRun > 10)
    /// ```
    public struct Report: Sendable, CustomStringConvertible {
        /// The plan's type name.
        public var planName: String
        public var problems: [Problem]
        /// The names of the scenarios that ran, in order.
        public var scenarios: [String]
        /// How long the whole verification took.
        public var duration: Duration

        public init(planName: String, problems: [Problem], scenarios: [String], duration: Duration) {
            self.planName = planName
            self.problems = problems
            self.scenarios = scenarios
            self.duration = duration
        }

        public var scenariosRun: Int { scenarios.count }

        /// The problems of one scenario.
        public func problems(inScenario scenario: String) -> [Problem] {
            problems.filter { $0.scenario == scenario }
        }

        public var description: String {
            let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            let problemCount =
                problems.isEmpty ? "no problems" : "\(problems.count) problem\(problems.count == 1 ? "" : "s")"
            var text =
                "Migration plan \(planName): \(scenariosRun) scenarios, \(problemCount) "
                + "(\(String(format: "%.2f", seconds)) s)"
            for (number, problem) in problems.enumerated() {
                text += "\n\(number + 1). \(problem)"
            }
            return text
        }
    }
}
