import BlueZ
import DBus
/// `composer-cli`'s side of the API: each `SpeakerdControl` call is one D-Bus method call.
public final class SpeakerdDBusClient: SpeakerdControl {
    private let connection: DBusConnection
    private let busName: String
    /// How the bus is named in messages ("system", "session" or its address).
    private let busDescription: String

    public init(connection: DBusConnection, busName: String = SpeakerdBus.name, busDescription: String = "system") {
        self.connection = connection
        self.busName = busName
        self.busDescription = busDescription
    }

    public static func connect(_ bus: BusSelection) async throws(SpeakerdError) -> SpeakerdDBusClient {
        let address: String
        do { address = try bus.busAddress.resolve() } catch {
            throw .unreachable(bus: bus.description, reason: error.description)  // no address to try
        }
        do {
            return SpeakerdDBusClient(connection: try await DBusConnection.connect(.address(address)), busDescription: bus.description)
        } catch {
            throw .unreachable(bus: bus.description, reason: busDown(at: address, error))
        }
    }

    /// Why the bus itself could not be reached: without it nothing can start or reach speakerd.
    static func busDown(at address: String, _ error: DBusError) -> String {
        let why = if case .connectionFailed(_, let reason) = error { reason } else { error.description }
        return "the bus is down: nothing answers at \(address) (\(why)); "
            + "check it with 'systemctl status dbus', then speakerd with 'systemctl start speakerd' and 'journalctl -u speakerd'"
    }

    public func status() async throws(SpeakerdError) -> StatusReport {
        try await decode("Status") { (value: DBusValue) throws(DBusError) in try SpeakerdDBusRecords.status(from: value) }
    }

    public func startup() async throws(SpeakerdError) -> StartupReport {
        try await decode("StartupTimeline") { (value: DBusValue) throws(DBusError) in try SpeakerdDBusRecords.startup(from: value) }
    }

    public func scan() async throws(SpeakerdError) -> ScanReport {
        try await decode("Scan", timeout: .seconds(120)) { (value: DBusValue) throws(DBusError) in try SpeakerdDBusRecords.scan(from: value) }
    }

    /// `ScanFor`; the reply may take the scan's whole length, so the call waits that long and a minute.
    public func scan(seconds: Int) async throws(SpeakerdError) -> ScanReport {
        if let problem = ScanLength.problem(seconds) { throw .local(problem) }
        return try await decode("ScanFor", [.uint32(UInt32(seconds))], timeout: .seconds(seconds + 60)) { (value: DBusValue) throws(DBusError) in
            try SpeakerdDBusRecords.scan(from: value)
        }
    }

    public func skip() async throws(SpeakerdError) -> StatusReport {
        try await decode("Skip") { (value: DBusValue) throws(DBusError) in try SpeakerdDBusRecords.status(from: value) }
    }

    public func adjust(_ control: LiveControlRequest) async throws(SpeakerdError) -> StatusReport {
        try await decode("Adjust", [.string(control.name), .string(control.value)]) { (value: DBusValue) throws(DBusError) in
            try SpeakerdDBusRecords.status(from: value)
        }
    }

    public func clearQueue() async throws(SpeakerdError) -> StatusReport {
        try await decode("ClearQueue") { (value: DBusValue) throws(DBusError) in try SpeakerdDBusRecords.status(from: value) }
    }

    public func speakers() async throws(SpeakerdError) -> SpeakersReport {
        try await decode("Speakers") { (value: DBusValue) throws(DBusError) in try SpeakerdDBusRecords.speakers(from: value) }
    }

    public func connect(_ address: BluetoothAddress?) async throws(SpeakerdError) -> StatusReport {
        try await connect(address, force: false)
    }

    public func connect(_ address: BluetoothAddress?, force: Bool) async throws(SpeakerdError) -> StatusReport {
        try await decode(force ? "ConnectAnyDevice" : "Connect", [.string(address?.description ?? "")],
                         timeout: .seconds(60)) { (value: DBusValue) throws(DBusError) in
            try SpeakerdDBusRecords.status(from: value)
        }
    }

    public func disconnect() async throws(SpeakerdError) -> StatusReport {
        try await decode("Disconnect") { (value: DBusValue) throws(DBusError) in try SpeakerdDBusRecords.status(from: value) }
    }

    public func forget(_ address: BluetoothAddress) async throws(SpeakerdError) -> SpeakersReport {
        try await forget(address, keepPairing: false)
    }

    public func forget(_ address: BluetoothAddress, keepPairing: Bool) async throws(SpeakerdError) -> SpeakersReport {
        try await decode(keepPairing ? "ForgetKeepingPairing" : "Forget", [.string(address.description)]) { (value: DBusValue) throws(DBusError) in
            try SpeakerdDBusRecords.speakers(from: value)
        }
    }

    public func play(_ request: PlayRequest) async throws(SpeakerdError) -> StatusReport {
        let fd: DBusUnixFD
        do { fd = try DBusUnixFD(duplicating: request.file.rawValue) } catch {
            throw .local("cannot pass the file to speakerd: \(error.description)")
        }
        // The daemon answers within about 20 s: with the song's outcome, or with "still waiting"
        // and a request id whose outcome comes as PlayRequestEnded (the speaker may take up to
        // play_timeout_seconds). So both streams are subscribed before the call.
        let (endings, owners) = try await signalsAndOwners("PlayRequestEnded")
        defer {
            endings.cancel()
            owners.cancel()
        }
        // `PlayArranged` only when controls are asked for, so a plain play still works with a
        // speakerd from before them.
        var arguments: [DBusValue] = [.unixFD(fd), .string(request.displayName), .bool(request.queue)]
        if !request.arrangement.isEmpty { arguments.append(SpeakerdDBusRecords.encode(request.arrangement)) }
        let (status, pending) = try await decode(request.arrangement.isEmpty ? "Play" : "PlayArranged", arguments,
                                                 timeout: .seconds(60)) { (value: DBusValue) throws(DBusError) in
            (try SpeakerdDBusRecords.status(from: value), try SpeakerdDBusRecords.pendingRequest(from: value))
        }
        guard let pending else { return status }
        return try await Self.outcome(of: pending, endings: endings, owners: owners).get()
    }

    /// How a `Play` answered "still waiting" ended: its `PlayRequestEnded`, or speakerd going
    /// away (a restart forgets the request, and sends nothing about it).
    private static func outcome(of request: UInt64, endings: DBusSignalStream,
                                owners: DBusNameOwnerStream) async -> Result<StatusReport, SpeakerdError> {
        await withTaskGroup(of: Result<StatusReport, SpeakerdError>?.self) { group in
            group.addTask {
                for await signal in endings {
                    guard let id = try? signal.arguments.decode(UInt64.self, at: 0), id == request else { continue }
                    guard signal.arguments.count == 4 else {
                        return .failure(.badReply("PlayRequestEnded carried \(signal.arguments.count) values, not 4"))
                    }
                    do throws(DBusError) {
                        let name = try signal.arguments.decode(String.self, at: 1)
                        let message = try signal.arguments.decode(String.self, at: 2)
                        guard name.isEmpty else { return .failure(.rejected(name: name, message: message)) }
                        return .success(try SpeakerdDBusRecords.status(from: signal.arguments[3]))
                    } catch {
                        return .failure(.badReply("PlayRequestEnded: \(error.description)"))
                    }
                }
                return nil
            }
            group.addTask {
                for await _ in owners.dropFirst() {  // the first is the owner now
                    return .failure(.rejected(name: SpeakerdBus.ErrorName.failed,
                                              message: "speakerd stopped while the song was waiting for the speaker"))
                }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failure(.unreachable(bus: "", reason: "lost the D-Bus connection while the song was waiting"))
        }
    }

    /// speakerd's `member` signals and the changes of who owns its name, both subscribed (their
    /// match rules on the bus) before this returns.
    private func signalsAndOwners(_ member: String) async throws(SpeakerdError) -> (DBusSignalStream, DBusNameOwnerStream) {
        do {
            let signals = try await connection.signals(matching: DBusMatchRule(
                sender: busName, path: SpeakerdBus.path, interface: SpeakerdBus.interface, member: member))
            return (signals, try await connection.nameOwnerChanges(for: busName))
        } catch {
            throw .unreachable(bus: busDescription, reason: error.description)
        }
    }

    /// One element per PlaybackChanged signal from speakerd, and one whenever another process
    /// takes over speakerd's name (a restart sends no signal about the song it forgot), for
    /// `play --wait`; the match rules are on the bus before this returns and live as long as the
    /// stream is iterated.
    public func playbackChanges() async throws(SpeakerdError) -> AsyncStream<Void> {
        let (signals, owners) = try await signalsAndOwners("PlaybackChanged")
        return AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let task = Task {
                for await _ in signals { continuation.yield() }
                continuation.finish()
            }
            let ownerTask = Task {
                for await _ in owners.dropFirst() { continuation.yield() } // The first is the owner now.
            }
            continuation.onTermination = { _ in
                task.cancel()
                ownerTask.cancel()
                signals.cancel()
                owners.cancel()
            }
        }
    }

    /// The candidates speakerd announces while a scan runs (`ScanCandidates`), newest first if
    /// they come faster than they are read; subscribed before this returns.
    public func scanCandidates() async throws(SpeakerdError) -> AsyncStream<ScanReport> {
        let signals: DBusSignalStream
        do {
            signals = try await connection.signals(matching: DBusMatchRule(
                sender: busName, path: SpeakerdBus.path, interface: SpeakerdBus.interface, member: "ScanCandidates"))
        } catch {
            throw .unreachable(bus: busDescription, reason: error.description)
        }
        return AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let task = Task {
                for await signal in signals {
                    guard let value = signal.arguments.first,
                          let report = try? SpeakerdDBusRecords.scan(from: value) else { continue }
                    continuation.yield(report)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in
                task.cancel()
                signals.cancel()
            }
        }
    }

    /// The unique bus name of the process serving speakerd now (nil when none, or when the bus
    /// cannot say): `play --wait` compares it to notice a restart.
    public func daemonInstance() async -> String? {
        guard let owner = try? await connection.nameOwner(of: busName) else { return nil }
        return owner
    }

    public func stop() async throws(SpeakerdError) -> StatusReport { try await simple("Stop") }
    public func pause() async throws(SpeakerdError) -> StatusReport { try await simple("Pause") }
    public func resume() async throws(SpeakerdError) -> StatusReport { try await simple("Resume") }

    public func volume() async throws(SpeakerdError) -> VolumeReport {
        try await decode("Volume") { (value: DBusValue) throws(DBusError) in try SpeakerdDBusRecords.volume(from: value) }
    }

    public func setVolume(_ change: VolumeChange) async throws(SpeakerdError) -> VolumeReport {
        try await decode("SetVolume", [.string(change.description)]) { (value: DBusValue) throws(DBusError) in
            try SpeakerdDBusRecords.volume(from: value)
        }
    }

    private func simple(_ method: String) async throws(SpeakerdError) -> StatusReport {
        try await decode(method) { (value: DBusValue) throws(DBusError) in try SpeakerdDBusRecords.status(from: value) }
    }

    private func decode<T>(_ method: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(30),
                           _ convert: (DBusValue) throws(DBusError) -> T) async throws(SpeakerdError) -> T {
        let reply: [DBusValue]
        do {
            reply = try await connection.call(destination: busName, path: SpeakerdBus.path, interface: SpeakerdBus.interface,
                                              method: method, arguments: arguments, timeout: timeout)
        } catch {
            throw translate(error)
        }
        guard let first = reply.first else { throw .badReply("\(method) returned nothing") }
        do { return try convert(first) } catch { throw .badReply("\(method): \(error.description)") }
    }

    /// The two commands that start speakerd and show why it did not run.
    static let startHint = "start it with 'systemctl start speakerd', its log is 'journalctl -u speakerd'"

    /// Why nobody answered, and what to do.
    static let notRunning = "speakerd is not running (and could not be started); " + startHint

    /// The bus daemon's answers when it tried to start speakerd on request (D-Bus activation)
    /// and failed: the program did not run or exited (`Spawn.*`), or did not take its name in time.
    static func isActivationFailure(_ name: String) -> Bool {
        name.hasPrefix("org.freedesktop.DBus.Error.Spawn.") || name == "org.freedesktop.DBus.Error.TimedOut"
    }

    func translate(_ error: DBusError) -> SpeakerdError { Self.translate(error, bus: busDescription) }

    static func translate(_ error: DBusError, bus busDescription: String) -> SpeakerdError {
        switch error {
        case .remote(let name, _) where name == DBusError.Name.serviceUnknown || name == DBusError.Name.nameHasNoOwner:
            return .unreachable(bus: busDescription, reason: SpeakerdDBusClient.notRunning)
        case .remote(let name, let message) where isActivationFailure(name):
            let detail = message.isEmpty ? name : "\(name): \(message)"
            return .unreachable(bus: busDescription, reason: "speakerd could not be started (\(detail)); " + startHint)
        case .remote(let name, let message) where name == "org.freedesktop.DBus.Error.AccessDenied":
            return .rejected(name: name, message: "not allowed to talk to speakerd (join the speakerd group): \(message)")
        case .remote(let name, let message):
            return .rejected(name: name, message: message)
        case .disconnected:
            return .unreachable(bus: busDescription, reason: "lost the D-Bus connection (the bus daemon exited or restarted)")
        case .timeout(let method, let milliseconds):
            // The call reached speakerd's name (no owner, or a failed start, is an error of its
            // own above), so speakerd runs and did not answer: say that, not "is it running?".
            let member = method.split(separator: ".").last.map(String.init) ?? method
            let seconds = milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
            return .rejected(name: DBusError.Name.noReply, message: "speakerd is running but did not answer \(member) within \(seconds) "
                + "(busy or stuck); its log is 'journalctl -u speakerd', 'systemctl restart speakerd' restarts it")
        default:
            return .rejected(name: SpeakerdBus.ErrorName.failed, message: error.description)
        }
    }
}

extension BusSelection {
    /// The D-Bus layer's address for this selection (`.system` honours DBUS_SYSTEM_BUS_ADDRESS).
    public var busAddress: BusAddress {
        switch self {
        case .system: .system
        case .session: .session
        case .address(let address): .address(address)
        }
    }
}
