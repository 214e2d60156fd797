import SystemPackage

/// Builds the exported `io.speakerd.Daemon1` object over any `SpeakerdControl` (the daemon).
///
/// Methods return the same records `composer-cli` prints; properties `Readiness`, `Status`,
/// `Speaker` and `Playback` carry the current state, and every change is announced with
/// PropertiesChanged plus the explicit `ReadinessChanged`, `SpeakerChanged` and
/// `PlaybackChanged` signals. Input is checked here, at the edge: a malformed address is an
/// `InvalidAddress` error naming the text; wrong argument types are refused by the D-Bus
/// layer against the declared signatures before a handler runs.
///
/// Every string argument has a size limit (`ArgumentLimits`), checked before it is used, and
/// an error reply quotes at most a short prefix of what was sent. The methods that may wait on
/// the outside world or hold a client's descriptor (`Play`, `Scan`, `Connect`, `Disconnect`,
/// `Forget`) are bounded by `SpeakerdRequestLimits`: over them a call gets
/// `io.speakerd.Error.Busy` at once. A call whose client leaves the bus is cancelled.
///
/// The object refers to its control weakly: the daemon owns its connection, the connection its
/// exported objects, so a strong reference back would keep every daemon alive forever. A call
/// that arrives after the daemon is gone gets `io.speakerd.Error.NotReady` ("speakerd is
/// shutting down"), never a crash.
public enum SpeakerdDBusObject {
    /// Sizes of the string arguments, in UTF-8 bytes.
    public enum ArgumentLimits {
        /// A song's display name (usually a file's base name; Linux allows 255 bytes).
        public static let displayName = 255
        /// A Bluetooth address is 17 characters; a little slack keeps the message about its form.
        public static let address = 32
        /// How much of a refused argument an error reply quotes.
        public static let quotedPrefix = 40
    }

    public static func make<Control: SpeakerdControl & AnyObject>(
        serving control: Control, initial: StatusReport,
        limits: SpeakerdRequestLimits? = nil
    ) throws(DBusError) -> DBusObject {
        let record = SpeakerdDBusRecords.self
        let limits = limits ?? (control as? any SpeakerdRequestLimitsSource)?.requestLimits ?? .default
        func method(_ name: String, inputs: [DBusArgument] = [], output: DBusArgument, bounded: Bool = false,
                    _ body: @escaping @Sendable (Control, DBusMethodCallContext) async throws -> DBusValue) -> DBusMethod {
            DBusMethod(name, inputs: inputs, outputs: [output], bounded: bounded) { [weak control] context in
                do {
                    guard let control else {
                        throw SpeakerdError.rejected(name: SpeakerdBus.ErrorName.notReady, message: "speakerd is shutting down")
                    }
                    return [try await body(control, context)]
                } catch let error as SpeakerdError { throw error.dbusError }
            }
        }
        let status = DBusArgument("status", "a{sv}")
        let interface = DBusInterface(SpeakerdBus.interface, methods: [
            method("Status", output: status) { control, _ in record.encode(try await control.status()) },
            method("StartupTimeline", output: DBusArgument("timeline", "a{sv}")) { control, _ in record.encode(try await control.startup()) },
            method("Scan", output: DBusArgument("candidates", "aa{sv}"), bounded: true) { control, _ in record.encode(try await control.scan()) },
            method("Speakers", output: DBusArgument("speakers", "aa{sv}")) { control, _ in record.encode(try await control.speakers()) },
            method("Connect", inputs: [DBusArgument("address", "s")], output: status, bounded: true) { control, context in
                let text = try Self.string(context, 0, limit: ArgumentLimits.address, what: "address")
                return record.encode(try await control.connect(text.isEmpty ? nil : try Self.address(text), force: false))
            },
            // `composer-cli connect --force`: also a device that does not look like a speaker.
            method("ConnectAnyDevice", inputs: [DBusArgument("address", "s")], output: status, bounded: true) { control, context in
                let text = try Self.string(context, 0, limit: ArgumentLimits.address, what: "address")
                return record.encode(try await control.connect(text.isEmpty ? nil : try Self.address(text), force: true))
            },
            method("Disconnect", output: status, bounded: true) { control, _ in record.encode(try await control.disconnect()) },
            method("Forget", inputs: [DBusArgument("address", "s")], output: DBusArgument("speakers", "aa{sv}"),
                   bounded: true) { control, context in
                let text = try Self.string(context, 0, limit: ArgumentLimits.address, what: "address")
                return record.encode(try await control.forget(try Self.address(text), keepPairing: false))
            },
            // `composer-cli forget --keep-pairing`: speakerd forgets it, BlueZ keeps the pairing.
            method("ForgetKeepingPairing", inputs: [DBusArgument("address", "s")], output: DBusArgument("speakers", "aa{sv}"),
                   bounded: true) { control, context in
                let text = try Self.string(context, 0, limit: ArgumentLimits.address, what: "address")
                return record.encode(try await control.forget(try Self.address(text), keepPairing: true))
            },
            method("Play", inputs: [DBusArgument("file", "h"), DBusArgument("name", "s"), DBusArgument("queue", "b")],
                   output: status, bounded: true) { control, context in
                let request = try Self.playRequest(context)
                return record.encode(try await control.play(request))
            },
            method("Stop", output: status) { control, _ in record.encode(try await control.stop()) },
            method("Pause", output: status) { control, _ in record.encode(try await control.pause()) },
            method("Resume", output: status) { control, _ in record.encode(try await control.resume()) },
        ], properties: [
            DBusProperty("Version", value: .string(SpeakerdVersion.current)),
            DBusProperty("Readiness", value: .string(initial.readiness)),
            DBusProperty("Status", value: .string(initial.message)),
            DBusProperty("Speaker", value: initial.speaker.map(record.encode) ?? .properties([:])),
            DBusProperty("Playback", value: record.encode(initial.playback)),
        ], signals: [
            DBusSignalDeclaration("ReadinessChanged", arguments: [DBusArgument("readiness", "s")]),
            DBusSignalDeclaration("SpeakerChanged", arguments: [DBusArgument("speaker", "a{sv}")]),
            DBusSignalDeclaration("PlaybackChanged", arguments: [DBusArgument("playback", "a{sv}")]),
            // While a scan runs: the candidates so far, best first (the shape `Scan` returns).
            DBusSignalDeclaration("ScanCandidates", arguments: [DBusArgument("candidates", "aa{sv}")]),
        ])
        return try DBusObject(interfaces: [interface], callLimits: limits.dbusCallLimits)
    }

    private static func string(_ context: DBusMethodCallContext, _ index: Int, limit: Int,
                               what: String) throws(SpeakerdError) -> String {
        let text: String
        do { text = try context.argument(index, as: String.self) } catch {
            throw .rejected(name: DBusError.Name.invalidArgs, message: error.description)
        }
        guard text.utf8.count <= limit else {
            throw .rejected(name: DBusError.Name.invalidArgs,
                            message: "the \(what) is \(text.utf8.count) bytes long (at most \(limit)): \(quoted(text))")
        }
        return text
    }

    private static func address(_ text: String) throws(SpeakerdError) -> BluetoothAddress {
        do { return try BluetoothAddress(text) } catch {
            throw .rejected(name: SpeakerdBus.ErrorName.invalidAddress, message: error.description)
        }
    }

    /// A short, printable quote of what a client sent, for an error reply.
    static func quoted(_ text: String) -> String {
        "'" + text.truncatedUTF8(to: ArgumentLimits.quotedPrefix) + "'"
    }

    private static func playRequest(_ context: DBusMethodCallContext) throws(SpeakerdError) -> PlayRequest {
        let name = try string(context, 1, limit: ArgumentLimits.displayName, what: "song's display name")
        do {
            let fd = try context.argument(0, as: DBusUnixFD.self)
            let queue = try context.argument(2, as: Bool.self)
            let owned = FileDescriptor(rawValue: try fd.duplicateRawDescriptor())
            return PlayRequest(file: owned, displayName: name.isEmpty ? "song" : name, queue: queue)
        } catch {
            throw .rejected(name: DBusError.Name.invalidArgs, message: error.description)
        }
    }
}

extension SpeakerdError {
    /// The reply a failed API call gets on the bus.
    var dbusError: DBusError {
        switch self {
        case let .rejected(name, message): .remote(name: name, message: message)
        case let .local(detail), let .badReply(detail): .remote(name: SpeakerdBus.ErrorName.failed, message: detail)
        case .unreachable: .remote(name: SpeakerdBus.ErrorName.failed, message: description)
        }
    }
}
