import BlueZ
import DBus
import AudioPath
import Configuration
import SpeakerdAPI
/// `composer-cli doctor`'s checks of the sound stack: whether a song could reach a speaker on this
/// box, and if not which part is missing — the sound server, BlueALSA, a Bluetooth audio
/// endpoint registered with BlueZ, or WirePlumber's BlueZ monitor stopped by seat monitoring.
///
/// The last is the trap people fall into most on headless boxes: WirePlumber (with logind) runs
/// its BlueZ monitor only while the user's session is active on a seat, so on a box nobody is
/// logged in at, a speaker connects and no sink ever appears. Every fact comes through `Facts`,
/// so tests can present any machine.
public struct SoundStackDoctor: Sendable {
    /// What the bus says, read once per doctor run (nil: the bus could not be asked).
    public struct BusFacts: Sendable, Equatable {
        /// `org.bluealsa` has an owner on the system bus.
        public var blueALSARunning: Bool
        /// Each BlueZ adapter's UUIDs (BlueZ adds the A2DP source UUID, 0000110a, once a
        /// program registers an A2DP source endpoint through `org.bluez.Media1`); nil when
        /// BlueZ is not on the bus.
        public var adapterUUIDs: [String: [String]]?

        public init(blueALSARunning: Bool, adapterUUIDs: [String: [String]]?) {
            self.blueALSARunning = blueALSARunning
            self.adapterUUIDs = adapterUUIDs
        }
    }

    public struct Facts: Sendable {
        public var bus: @Sendable (String) async -> BusFacts?
        public var findSoundServer: @Sendable (SoundServerLocation, [String: String]) -> SoundServerLocation.Found
        /// A file's text (nil: absent or unreadable).
        public var readFile: @Sendable (String) -> String?
        /// The names in a directory (empty: absent).
        public var listDirectory: @Sendable (String) -> [String]

        public init(
            bus: @escaping @Sendable (String) async -> BusFacts? = SoundStackDoctor.askBus,
            findSoundServer: @escaping @Sendable (SoundServerLocation, [String: String]) -> SoundServerLocation.Found = { $0.find(environment: $1) },
            readFile: @escaping @Sendable (String) -> String? = { try? TextFile.read($0) },
            listDirectory: @escaping @Sendable (String) -> [String] = LocalProbes.directoryEntries
        ) {
            self.bus = bus
            self.findSoundServer = findSoundServer
            self.readFile = readFile
            self.listDirectory = listDirectory
        }
    }

    static let a2dpSourceUUID = "0000110a-0000-1000-8000-00805f9b34fb"
    static let wirePlumberBlueZConfig = "/usr/share/wireplumber/bluetooth.lua.d/50-bluez-config.lua"
    static let wirePlumberOverrides = "/etc/wireplumber/bluetooth.lua.d"

    public let facts: Facts

    public init(facts: Facts = Facts()) { self.facts = facts }

    /// The checks for `configuration`'s output; `busAddress` is the bus speakerd would use (nil:
    /// it cannot be reached, which the bus check already reports).
    public func checks(configuration: DaemonConfiguration, environment: [String: String],
                       busAddress: String?) async -> [DoctorReport.Check] {
        let output = configuration.audioOutput
        switch output {
        case .file, .null: return [.init(name: "sound server", outcome: .ok, detail: "not used (audio_output = \(output))")]
        case .automatic, .pulseAudio, .alsa: break
        }
        let bus = if let busAddress { await facts.bus(busAddress) } else { BusFacts?.none }
        var checks: [DoctorReport.Check] = []
        let server = facts.findSoundServer(configuration.soundServers, environment)
        checks.append(soundServerCheck(output, server: server, blueALSA: bus?.blueALSARunning))
        if let check = blueALSACheck(output, running: bus?.blueALSARunning, server: server) { checks.append(check) }
        if let bus { checks.append(endpointCheck(bus.adapterUUIDs)) }
        if output.usesSoundServer, let check = wirePlumberCheck(user: configuration.soundServers.user) {
            checks.append(check)
        }
        return checks
    }

    func soundServerCheck(_ output: AudioOutputSetting, server: SoundServerLocation.Found, blueALSA: Bool?) -> DoctorReport.Check {
        switch (output, server) {
        case (.automatic, _) where blueALSA == true:
            return .init(name: "sound server", outcome: .ok, detail: "not needed: BlueALSA is running, and auto uses it")
        case (.automatic, .reachable(let candidate)), (.pulseAudio, .reachable(let candidate)):
            return .init(name: "sound server", outcome: .ok,
                         detail: "PulseAudio/PipeWire answers at \(candidate.server) (\(candidate.origin))")
        case (.automatic, .unreachable(let problem)):
            // auto never falls back to ALSA's default (HDMI or the jack on a Pi, not the speaker).
            return .init(name: "sound server", outcome: .problem,
                         detail: "\(NotReadyReason.noBluetoothAudioPathFix) (BlueALSA is not running and \(problem); docs: SOUND-SERVERS.md)")
        case (.pulseAudio, .unreachable(let problem)):
            return .init(name: "sound server", outcome: .problem,
                         detail: "\(problem): start PulseAudio or PipeWire, or give speakerd its socket (docs: SOUND-SERVERS.md, a drop-in)")
        default:
            return .init(name: "sound server", outcome: .ok, detail: "not used (audio_output = \(output))")
        }
    }

    /// BlueALSA matters where it is chosen: `auto` with no sound server, or an ALSA device of
    /// BlueALSA's plugin (`bluealsa:…`).
    func blueALSACheck(_ output: AudioOutputSetting, running: Bool?, server: SoundServerLocation.Found) -> DoctorReport.Check? {
        guard let running else { return nil }
        switch output {
        case .automatic:
            if running { return .init(name: "bluealsa", outcome: .ok, detail: "org.bluealsa is on the system bus") }
            if case .reachable = server { return nil }
            return .init(name: "bluealsa", outcome: .warning,
                         detail: "org.bluealsa is not on the system bus (is bluealsa.service running?)")
        case .alsa(let device) where device.hasPrefix("bluealsa"):
            return running ? .init(name: "bluealsa", outcome: .ok, detail: "org.bluealsa is on the system bus")
                : .init(name: "bluealsa", outcome: .problem,
                        detail: "audio_output names BlueALSA's device but org.bluealsa is not on the system bus: start bluealsa.service")
        default:
            return nil
        }
    }

    func endpointCheck(_ adapters: [String: [String]]?) -> DoctorReport.Check {
        guard let adapters else {
            return .init(name: "audio endpoint", outcome: .problem, detail: "BlueZ (org.bluez) is not on the bus: start bluetooth.service")
        }
        let offering = adapters.filter { $0.value.contains { $0.lowercased() == Self.a2dpSourceUUID } }.keys.sorted()
        if !offering.isEmpty {
            return .init(name: "audio endpoint", outcome: .ok,
                         detail: "\(offering.joined(separator: ", ")) can send A2DP audio (an endpoint is registered with org.bluez.Media1)")
        }
        return .init(name: "audio endpoint", outcome: .problem, detail: """
            no Bluetooth audio endpoint is registered with BlueZ (org.bluez.Media1): a speaker would connect \
            but never get audio; start BlueALSA, or PipeWire with WirePlumber's BlueZ monitor
            """)
    }

    /// WirePlumber 0.4's BlueZ monitor with `with-logind` (its default) runs only while a
    /// session is active on seat0; overrides in /etc (or the sound user's ~/.config) that set it
    /// false avoid the trap. Nil where WirePlumber is not installed.
    func wirePlumberCheck(user: String?) -> DoctorReport.Check? {
        guard let config = facts.readFile(Self.wirePlumberBlueZConfig) else { return nil }
        let enabledByDefault = config.contains("[\"with-logind\"] = true")
        var overrideDirectories = [Self.wirePlumberOverrides]
        if let user, let home = LocalProbes.homeDirectory(of: user) {
            overrideDirectories.append(home + "/.config/wireplumber/bluetooth.lua.d")
        }
        let disabled = overrideDirectories.contains { directory in
            facts.listDirectory(directory).contains { name in
                name.hasSuffix(".lua") && (facts.readFile(directory + "/" + name).map(Self.disablesLogind) ?? false)
            }
        }
        if !enabledByDefault || disabled {
            return .init(name: "wireplumber", outcome: .ok, detail: "its BlueZ monitor does not depend on a seat (with-logind is off)")
        }
        if facts.readFile("/run/systemd/seats/seat0")?.split(separator: "\n").contains(where: { $0.hasPrefix("ACTIVE=") }) == true {
            return .init(name: "wireplumber", outcome: .ok, detail: "a session is active on seat0, so its BlueZ monitor runs")
        }
        return .init(name: "wireplumber", outcome: .warning, detail: """
            no session is active on seat0 and WirePlumber's BlueZ monitor follows the seat (with-logind): on a headless \
            box no speaker sink ever appears; set bluez_monitor.properties["with-logind"] = false in \
            /etc/wireplumber/bluetooth.lua.d/51-speakerd.lua (docs: SOUND-SERVERS.md)
            """)
    }

    static func disablesLogind(_ text: String) -> Bool {
        text.split(separator: "\n").contains { line in
            let code = line.split(separator: "--", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return code.contains("with-logind") && code.contains("false")
        }
    }

    /// Asks the bus once: BlueALSA's name, and BlueZ's adapters with their UUIDs. Nil when the
    /// bus cannot be reached (its own check says why).
    @Sendable public static func askBus(_ address: String) async -> BusFacts? {
        guard let connection = try? await DBusConnection.connect(.address(address)) else { return nil }
        defer { connection.close() }
        let running = (try? await connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            method: "NameHasOwner", arguments: [.string("org.bluealsa")], timeout: .seconds(5)).decode(Bool.self, at: 0)) ?? false
        var adapters: [String: [String]]?
        if let reply = try? await connection.call(
            destination: BlueZInterface.service, path: .root, interface: BlueZInterface.objectManager,
            method: "GetManagedObjects", timeout: .seconds(5)),
            let objects = try? reply.decode([DBusObjectPath: [String: [String: DBusValue]]].self, at: 0) {
            var found: [String: [String]] = [:]
            for (path, interfaces) in objects {
                guard let adapter = interfaces[BlueZInterface.adapter] else { continue }
                found[BlueZPaths.lastElement(of: path)] = (try? adapter.decode("UUIDs", as: [String].self)) ?? []
            }
            adapters = found
        }
        return BusFacts(blueALSARunning: running, adapterUUIDs: adapters)
    }
}

extension AudioOutputSetting {
    /// Whether songs may go through a PulseAudio/PipeWire server under this setting.
    var usesSoundServer: Bool {
        switch self {
        case .automatic, .pulseAudio: true
        default: false
        }
    }
}
