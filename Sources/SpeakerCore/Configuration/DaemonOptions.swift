/// speakerd's command-line flags as given, before they are merged with the config file.
///
/// The executable only fills this in; checking and merging live here so they are tested.
/// Precedence, lowest first: built-in defaults, the config file, the environment
/// (`STATE_DIRECTORY` from systemd), then flags. The bus is the exception: the bus that
/// activated speakerd (`DBUS_STARTER_ADDRESS`) stands below the config file, so the order is
/// `--bus`, config `bus`, the starter bus, then the system bus (`DBUS_SYSTEM_BUS_ADDRESS`).
public struct DaemonOptions: Equatable, Sendable {
    /// `--config FILE`; when nil the default path is used if it exists.
    public var configPath: String?
    /// `--state-dir DIR`.
    public var stateDirectory: String?
    /// `--bus system|session|ADDRESS`.
    public var bus: String?
    /// `--audio-output SPEC`.
    public var audioOutput: String?
    /// `--soundfont FILE`.
    public var soundfont: String?

    public init(configPath: String? = nil, stateDirectory: String? = nil, bus: String? = nil,
                audioOutput: String? = nil, soundfont: String? = nil) {
        self.configPath = configPath
        self.stateDirectory = stateDirectory
        self.bus = bus
        self.audioOutput = audioOutput
        self.soundfont = soundfont
    }

    /// Checks each flag on its own, so a typo is reported before any file is read.
    public func validate() throws(ConfigurationError) {
        var scratch = DaemonConfiguration.defaults
        try applyFlags(to: &scratch)
        if let configPath, configPath.isEmpty {
            throw .invalidOverride(source: "--config", problem: "the path is empty")
        }
    }

    /// Builds the effective configuration.
    ///
    /// - Parameters:
    ///   - environment: the process environment (`STATE_DIRECTORY`, and dbus-daemon's
    ///     `DBUS_STARTER_ADDRESS` / `DBUS_STARTER_BUS_TYPE` for an activated speakerd, and
    ///     systemd's `INVOCATION_ID`).
    ///   - readFile: reads a file's text; nil when it does not exist. Injected for tests.
    public func resolve(
        environment: [String: String],
        readFile: (String) throws(FileReadError) -> String? = TextFile.read
    ) throws(ConfigurationError) -> DaemonConfiguration {
        let path = configPath ?? DaemonConfiguration.defaultConfigPath
        var configuration = DaemonConfiguration.defaults
        // Activated for a request: serve where the request waits, unless the file or a flag say.
        if let activation = try BusActivation(environment: environment) {
            configuration.bus = activation.bus
            configuration.launchedByRequest = true
        }
        configuration.startedBySystemd = !(environment["INVOCATION_ID"] ?? "").isEmpty
        let text: String?
        do { text = try readFile(path) } catch { throw .unreadable(path: path, reason: error.description) }
        if let text {
            configuration = try ConfigFileParser(path: path).parse(text, over: configuration)
        } else if configPath != nil {
            // An explicit --config that is missing is a mistake; the default path is optional.
            throw .unreadable(path: path, reason: "no such file")
        }
        if let fromSystemd = environment["STATE_DIRECTORY"], !fromSystemd.isEmpty {
            // systemd passes a colon-separated list when several directories are configured.
            let first = String(fromSystemd.split(separator: ":").first ?? "")
            guard first.hasPrefix("/") else {
                throw .invalidOverride(source: "STATE_DIRECTORY", problem: "'\(fromSystemd)' is not an absolute path")
            }
            configuration.stateDirectory = first
        }
        try applyFlags(to: &configuration)
        return configuration
    }

    private func applyFlags(to configuration: inout DaemonConfiguration) throws(ConfigurationError) {
        let flags: [(flag: String, key: String, value: String?)] = [
            ("--state-dir", "state_dir", stateDirectory),
            ("--bus", "bus", bus),
            ("--audio-output", "audio_output", audioOutput),
            ("--soundfont", "soundfont", soundfont),
        ]
        for (flag, key, value) in flags {
            guard let value else { continue }
            do {
                try ConfigFileParser.apply(key: key, value: value, to: &configuration)
            } catch {
                throw .invalidOverride(source: flag,
                                       problem: "bad value '\(value)' (expected \(error.expected))")
            }
        }
    }
}
