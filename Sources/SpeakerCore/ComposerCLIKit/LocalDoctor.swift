import Glibc
import Playback
import SpeakerdAPI
import AudioPath
import Configuration

/// The checks `composer-cli doctor` can make on this machine without the daemon.
///
/// Each check is a plain function of injected facts (environment, file reader, probes), so
/// the tests can present any machine: no soundfont, a corrupt state file, no kernel Bluetooth.
public struct LocalDoctor: Sendable {
    /// The facts a doctor run reads; the defaults read the real machine.
    public struct Probes: Sendable {
        public var readFile: @Sendable (String) throws(FileReadError) -> String?
        /// The first bytes of a file (soundfont magic), or nil if it cannot be opened.
        public var fileHeader: @Sendable (String) -> [UInt8]?
        public var kernelBluetooth: @Sendable () -> KernelBluetoothFinding
        /// Tries to reach a D-Bus address; nil on success, else why not.
        public var reachBus: @Sendable (String) -> String?
        /// Why speakerd could not write its state directory, if it could not.
        public var stateDirectoryProblem: @Sendable (String) -> String?

        public init(
            readFile: @escaping @Sendable (String) throws(FileReadError) -> String? = TextFile.read,
            fileHeader: @escaping @Sendable (String) -> [UInt8]? = LocalProbes.fileHeader,
            kernelBluetooth: @escaping @Sendable () -> KernelBluetoothFinding = LocalProbes.kernelBluetooth,
            reachBus: @escaping @Sendable (String) -> String? = LocalProbes.reachBus,
            stateDirectoryProblem: @escaping @Sendable (String) -> String? = LocalProbes.stateDirectoryProblem
        ) {
            self.readFile = readFile
            self.fileHeader = fileHeader
            self.kernelBluetooth = kernelBluetooth
            self.reachBus = reachBus
            self.stateDirectoryProblem = stateDirectoryProblem
        }
    }

    public let options: DaemonOptions
    public let environment: [String: String]
    public let probes: Probes

    public init(options: DaemonOptions, environment: [String: String], probes: Probes = Probes()) {
        self.options = options
        self.environment = environment
        self.probes = probes
    }

    public func run() -> DoctorReport {
        DoctorReport(checks: machineChecks().checks)
    }

    /// Every check, the sound stack's included (which asks the bus).
    public func run(soundStack: SoundStackDoctor) async -> DoctorReport {
        let (checks, configuration) = machineChecks()
        let bus = checks.last { $0.name == "bus" }?.outcome == .ok ? busAddress(configuration.bus) : nil
        let sound = await soundStack.checks(configuration: configuration, environment: environment, busAddress: bus)
        return DoctorReport(checks: checks + sound)
    }

    private func machineChecks() -> (checks: [DoctorReport.Check], configuration: DaemonConfiguration) {
        var checks: [DoctorReport.Check] = []
        let configuration: DaemonConfiguration
        do {
            configuration = try options.resolve(environment: environment, readFile: probes.readFile)
            checks.append(configCheck())
        } catch {
            checks.append(.init(name: "config", outcome: .problem, detail: error.description))
            configuration = .defaults
        }
        checks.append(stateCheck(directory: configuration.stateDirectory))
        checks.append(soundfontCheck(path: configuration.soundfont))
        checks.append(kernelCheck())
        checks.append(busCheck(configuration.bus))
        return (checks, configuration)
    }

    /// The address of `bus` (nil: the session bus with no address set).
    private func busAddress(_ bus: BusSelection) -> String? {
        switch bus {
        case .system: environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"
        case .session: environment["DBUS_SESSION_BUS_ADDRESS"]
        case .address(let explicit): explicit
        }
    }

    private func configCheck() -> DoctorReport.Check {
        let path = options.configPath ?? DaemonConfiguration.defaultConfigPath
        let exists = (try? probes.readFile(path)) != nil
        return exists
            ? .init(name: "config", outcome: .ok, detail: "\(path) is valid")
            : .init(name: "config", outcome: .warning, detail: "no \(path); built-in defaults apply")
    }

    private func stateCheck(directory: String) -> DoctorReport.Check {
        let path = directory + "/state.json"
        if let problem = probes.stateDirectoryProblem(directory) {
            return .init(name: "state", outcome: .problem, detail: "speakers will not be remembered: \(problem)")
        }
        do {
            guard let text = try probes.readFile(path) else {
                return .init(name: "state", outcome: .ok, detail: "no \(path) yet (first run)")
            }
            let speakers = try StateFile.knownSpeakers(inStateFile: text)
            let names = speakers.prefix(3).map(\.name).joined(separator: ", ")
            return .init(name: "state", outcome: .ok,
                         detail: "\(speakers.count) known speaker(s)" + (names.isEmpty ? "" : ": \(names)"))
        } catch {
            return .init(name: "state", outcome: .warning,
                         detail: "\(path) is unusable (\(error)); speakerd will set it aside and start fresh")
        }
    }

    private func soundfontCheck(path: String) -> DoctorReport.Check {
        guard let header = probes.fileHeader(path) else {
            return .init(name: "soundfont", outcome: .problem,
                         detail: "\(path) cannot be opened; install timgm6mb-soundfont or set soundfont=")
        }
        // A SoundFont 2 file is a RIFF container of form type 'sfbk'.
        guard header.count >= 12, header[0..<4] == [0x52, 0x49, 0x46, 0x46], header[8..<12] == [0x73, 0x66, 0x62, 0x6B] else {
            return .init(name: "soundfont", outcome: .problem, detail: "\(path) is not a SoundFont 2 (.sf2) file")
        }
        return .init(name: "soundfont", outcome: .ok, detail: path)
    }

    private func kernelCheck() -> DoctorReport.Check {
        switch probes.kernelBluetooth() {
        case .controllers(let names):
            return .init(name: "kernel bluetooth", outcome: .ok, detail: "controllers: \(names.joined(separator: ", "))")
        case .noControllers:
            return .init(name: "kernel bluetooth", outcome: .problem,
                         detail: "Bluetooth is supported but no adapter is present; plug one in or check rfkill")
        case .unsupported:
            return .init(name: "kernel bluetooth", outcome: .problem,
                         detail: "this kernel has no Bluetooth support (AF_BLUETOOTH unavailable)")
        }
    }

    private func busCheck(_ bus: BusSelection) -> DoctorReport.Check {
        guard let address = busAddress(bus) else {
            return .init(name: "bus", outcome: .problem, detail: "session bus chosen but DBUS_SESSION_BUS_ADDRESS is unset")
        }
        if let failure = probes.reachBus(address) {
            return .init(name: "bus", outcome: .problem, detail: "cannot reach \(address): \(failure)")
        }
        // An explicit address is its own name: "bus at X", not "X bus at X".
        if case .address = bus { return .init(name: "bus", outcome: .ok, detail: "bus at \(address)") }
        return .init(name: "bus", outcome: .ok, detail: "\(bus) bus at \(address)")
    }
}

/// What the kernel says about Bluetooth.
public enum KernelBluetoothFinding: Equatable, Sendable {
    case controllers([String])
    case noControllers
    case unsupported
}
