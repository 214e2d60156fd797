import Glibc

/// Where a sound server speaking PulseAudio's native protocol (PulseAudio itself, or PipeWire's
/// pipewire-pulse) may be found by a system service.
///
/// A desktop client finds its server through its own session (`XDG_RUNTIME_DIR`); speakerd runs
/// as a system service with no session, so it also looks where its configuration points: an
/// explicit server (`pulse_server`) and the runtime socket of the user whose session runs the
/// server (`sound_server_user`, e.g. the Raspberry Pi's desktop user). The order is the order a
/// person would expect to win: the environment, then the configuration, then the system-wide
/// socket, then the configured user's session, then speakerd's own runtime directory.
public struct SoundServerLocation: Sendable, Equatable {
    /// `pulse_server`: a server string such as `unix:/run/user/1000/pulse/native` (nil: not set).
    public var configuredServer: String?
    /// `sound_server_user`: the user whose session's server speakerd may use (nil: not set).
    public var user: String?

    public init(configuredServer: String? = nil, user: String? = nil) {
        self.configuredServer = configuredServer
        self.user = user
    }

    /// One place a server may be: its server string and where speakerd learned of it.
    public struct Candidate: Sendable, Equatable {
        public var server: String
        public var origin: String
    }

    /// What looking for a server found.
    public enum Found: Sendable, Equatable {
        /// A server that accepted a connection (or a TCP server, which cannot be checked here).
        case reachable(Candidate)
        /// None answered: each place tried, with what went wrong, in one sentence.
        case unreachable(String)
    }

    /// Every place to look, in order; duplicates (the same socket named twice) are tried once.
    public func candidates(environment: [String: String],
                           runtimeDirectory: (String) -> String? = Self.runtimeDirectory(of:)) -> [Candidate] {
        var result: [Candidate] = []
        func add(_ server: String, _ origin: String) {
            for entry in server.split(separator: " ").map(String.init) where !result.contains(where: { $0.server == Self.normalised(entry) }) {
                result.append(Candidate(server: Self.normalised(entry), origin: origin))
            }
        }
        if let server = environment["PULSE_SERVER"], !server.isEmpty { add(server, "PULSE_SERVER") }
        if let configuredServer, !configuredServer.isEmpty { add(configuredServer, "pulse_server in the configuration") }
        add("/run/pulse/native", "the system-wide socket")
        if let user, let directory = runtimeDirectory(user) { add(directory + "/pulse/native", "user \(user)'s session") }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { add(runtime + "/pulse/native", "XDG_RUNTIME_DIR") }
        return result
    }

    /// Tries each candidate in order (a unix socket is connected to and closed at once).
    public func find(environment: [String: String]) -> Found {
        var problems: [String] = []
        for candidate in candidates(environment: environment) {
            guard candidate.server.hasPrefix("unix:") else { return .reachable(candidate) }
            let path = String(candidate.server.dropFirst(5))
            if let problem = UnixSocketProbe.connect(name: path, abstract: false) {
                problems.append("\(path) (\(problem.lowercased()))")
            } else {
                return .reachable(candidate)
            }
        }
        return .unreachable("no sound server at \(problems.joined(separator: " or "))")
    }

    /// A server string as libpulse takes it: a bare path becomes `unix:PATH`.
    static func normalised(_ entry: String) -> String {
        entry.hasPrefix("/") ? "unix:" + entry : entry
    }

    /// `/run/user/UID` of a user name (or numeric id), if the user exists.
    public static func runtimeDirectory(of user: String) -> String? {
        if let uid = UInt32(user) { return "/run/user/\(uid)" }
        guard let entry = getpwnam(user) else { return nil }
        return "/run/user/\(entry.pointee.pw_uid)"
    }
}

/// The process environment as a dictionary (Glibc's `environ`).
public enum ProcessEnvironment {
    public static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}
