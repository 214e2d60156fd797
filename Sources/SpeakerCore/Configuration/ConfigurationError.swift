/// Why a configuration could not be read; each case prints as one line a person can act on.
public enum ConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file named by `--config` does not exist or cannot be read.
    case unreadable(path: String, reason: String)
    /// A line of the file is wrong; `line` counts from 1 like an editor does.
    case invalidLine(path: String, line: Int, problem: String)
    /// A command-line flag or environment variable has a value that does not fit.
    case invalidOverride(source: String, problem: String)

    public var description: String {
        switch self {
        case let .unreadable(path, reason):
            "cannot read config file \(path): \(reason)"
        case let .invalidLine(path, line, problem):
            "\(path):\(line): \(problem)"
        case let .invalidOverride(source, problem):
            "\(source): \(problem)"
        }
    }
}
