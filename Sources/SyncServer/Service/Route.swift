/// Which handler a request goes to, decided from the method and path alone.
enum Route: Equatable {
    enum Endpoint: String { case hello, push, pull }

    case health
    case metrics
    case dataset(String, Endpoint)
    case wrongMethod(allowed: String)
    case notFound

    init(method: String, path: String) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        switch (method, parts.count, parts.first) {
        case (_, 2, "") where parts[1] == "healthz" || parts[1] == "metrics":
            self = method == "GET" ? (parts[1] == "healthz" ? .health : .metrics) : .wrongMethod(allowed: "GET")
        case (_, 5, "") where parts[1] == "v1" && parts[2] == "datasets":
            guard DatasetName.isValid(String(parts[3])), let endpoint = Endpoint(rawValue: String(parts[4])) else {
                self = .notFound
                return
            }
            self = method == "POST" ? .dataset(String(parts[3]), endpoint) : .wrongMethod(allowed: "POST")
        default:
            self = .notFound
        }
    }

    /// The route as a metrics label: never the dataset name, so labels stay few.
    var metricName: String {
        switch self {
        case .health: "healthz"
        case .metrics: "metrics"
        case .dataset(_, let endpoint): endpoint.rawValue
        case .wrongMethod, .notFound: "other"
        }
    }
}
