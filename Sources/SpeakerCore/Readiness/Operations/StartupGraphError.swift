/// Why a start-up graph cannot run. Found before anything runs, and named precisely.
public enum StartupGraphError: Error, Hashable, CustomStringConvertible {
    /// Two operations share a name.
    case duplicateOperation(String)
    /// `operation` depends on `dependency`, which is not in the graph.
    case missingDependency(operation: String, dependency: String)
    /// The operations depend on each other in a loop; the first name is repeated at the end.
    case cycle([String])
    /// A scenario step has no body to run.
    case missingBody(String)

    public var description: String {
        switch self {
        case let .duplicateOperation(name):
            "start-up graph declares the operation '\(name)' twice"
        case let .missingDependency(operation, dependency):
            "start-up operation '\(operation)' depends on '\(dependency)', which is not in the graph"
        case let .cycle(names):
            "start-up graph has a dependency cycle: \(names.joined(separator: " → "))"
        case let .missingBody(name):
            "start-up step '\(name)' has no operation to run"
        }
    }
}
