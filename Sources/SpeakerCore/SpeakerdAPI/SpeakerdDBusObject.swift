import BlueZ
import DBus
import Synchronization
import SystemPackage

/// Builds the exported `io.speakerd.Daemon1` object over any `SpeakerdControl` (the daemon).
///
/// Methods return the same records `composer-cli` prints; properties `Readiness`, `Status`,
/// `Speaker`, `Playback` and `Volume` carry the current state, and every change is announced with
/// PropertiesChanged plus the explicit `ReadinessChanged`, `SpeakerChanged` and
/// `PlaybackChanged` signals. Input is checked here, at the edge: a malformed address is an
/// `InvalidAddress` error naming the text; wrong argument types are refused by the D-Bus
/// layer against the declared signatures before a handler runs.
///
/// Every string argument has a size limit (`ArgumentLimits`), checked before it is used, and
/// an error reply quotes at most a short prefix of what was sent. The methods that may wait on
/// the outside world or hold a client's descriptor (`Play`, `Scan`, `Connect`, `Disconnect`,
/// `Forget`, `Volume`, `SetVolume`) are bounded by `SpeakerdRequestLimits`: over them a call gets
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
        /// "+100" is four characters; a little slack keeps the message about its form.
        public static let volumeChange = 16
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
        // `Play`'s late outcomes are signals of this object, which exists only once built. Held
        // weakly: the object owns these method closures, so a strong reference would be a cycle
        // and no exported object would ever be freed.
        let announcer = Mutex(WeakDBusObject())
        let requests = PlayRequestNumbers()
        let interface = DBusInterface(SpeakerdBus.interface, methods: [
            method("Status", output: status) { control, _ in record.encode(try await control.status()) },
            method("StartupTimeline", output: DBusArgument("timeline", "a{sv}")) { control, _ in record.encode(try await control.startup()) },
            method("Scan", output: DBusArgument("candidates", "aa{sv}"), bounded: true) { control, _ in record.encode(try await control.scan()) },
            // `composer-cli scan --duration N`: a scan of `seconds` (1 to 300) instead of scan_seconds.
            method("ScanFor", inputs: [DBusArgument("seconds", "u")], output: DBusArgument("candidates", "aa{sv}"),
                   bounded: true) { control, context in
                let seconds: UInt32
                do { seconds = try context.argument(0, as: UInt32.self) } catch {
                    throw SpeakerdError.rejected(name: DBusError.Name.invalidArgs, message: "\(error)")
                }
                if let problem = ScanLength.problem(Int(seconds)) {
                    throw SpeakerdError.rejected(name: DBusError.Name.invalidArgs, message: problem)
                }
                return record.encode(try await control.scan(seconds: Int(seconds)))
            },
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
                return try await Self.play(request, on: control, context: context, within: limits.playAnswerWithin,
                                           requests: requests, announce: { arguments in
                    announcer.withLock { $0.object }?.emitSignal(interface: SpeakerdBus.interface, member: "PlayRequestEnded",
                                                          arguments: arguments)
                })
            },
            // `play` with the composer's controls: the arrangement as a{sv} of what the person
            // wrote (From, To, Loop, LoopCount, Tempo, Transpose, Mute, Solo, CountIn).
            method("PlayArranged", inputs: [DBusArgument("file", "h"), DBusArgument("name", "s"), DBusArgument("queue", "b"),
                                            DBusArgument("arrangement", "a{sv}")],
                   output: status, bounded: true) { control, context in
                var request = try Self.playRequest(context)
                do {
                    guard context.arguments.count > 3 else { throw DBusError.invalidArgument("PlayArranged takes an arrangement (a{sv})") }
                    request.arrangement = try SpeakerdDBusRecords.arrangement(from: context.arguments[3])
                } catch {
                    try? request.file.close()
                    throw SpeakerdError.rejected(name: DBusError.Name.invalidArgs, message: "\(error)")
                }
                return try await Self.play(request, on: control, context: context, within: limits.playAnswerWithin,
                                           requests: requests, announce: { arguments in
                    announcer.withLock { $0.object }?.emitSignal(interface: SpeakerdBus.interface, member: "PlayRequestEnded",
                                                          arguments: arguments)
                })
            },
            method("Stop", output: status) { control, _ in record.encode(try await control.stop()) },
            method("Pause", output: status) { control, _ in record.encode(try await control.pause()) },
            method("Resume", output: status) { control, _ in record.encode(try await control.resume()) },
            method("Skip", output: status) { control, _ in record.encode(try await control.skip()) },
            method("ClearQueue", output: status) { control, _ in record.encode(try await control.clearQueue()) },
            // A composer's control on the playing song: `name` seek, loop, tempo, transpose, mute,
            // solo or unmute, `value` as the person wrote it (speakerd reads it).
            method("Adjust", inputs: [DBusArgument("name", "s"), DBusArgument("value", "s")], output: status) { control, context in
                let name = try Self.string(context, 0, limit: LiveControlRequest.maxBytes, what: "control name")
                let value = try Self.string(context, 1, limit: LiveControlRequest.maxBytes, what: "control value")
                return record.encode(try await control.adjust(LiveControlRequest(name: name, value: value)))
            },
            // Both wait on the sound server or BlueALSA, so both are bounded like the other long requests.
            method("Volume", output: DBusArgument("volume", "a{sv}"), bounded: true) { control, _ in record.encode(try await control.volume()) },
            // `change` is what `composer-cli volume` takes: "40" (percent), "+5" or "-5".
            method("SetVolume", inputs: [DBusArgument("change", "s")], output: DBusArgument("volume", "a{sv}"),
                   bounded: true) { control, context in
                let text = try Self.string(context, 0, limit: ArgumentLimits.volumeChange, what: "volume change")
                return record.encode(try await control.setVolume(try Self.volumeChange(text)))
            },
        ], properties: [
            DBusProperty("Version", value: .string(SpeakerdVersion.current)),
            DBusProperty("Readiness", value: .string(initial.readiness)),
            DBusProperty("Status", value: .string(initial.message)),
            DBusProperty("Speaker", value: initial.speaker.map(record.encode) ?? .properties([:])),
            DBusProperty("Playback", value: record.encode(initial.playback)),
            DBusProperty("Volume", value: record.volumeProperty(initial.volume)),
        ], signals: [
            DBusSignalDeclaration("ReadinessChanged", arguments: [DBusArgument("readiness", "s")]),
            DBusSignalDeclaration("SpeakerChanged", arguments: [DBusArgument("speaker", "a{sv}")]),
            DBusSignalDeclaration("PlaybackChanged", arguments: [DBusArgument("playback", "a{sv}")]),
            // While a scan runs: the candidates so far, best first (the shape `Scan` returns).
            DBusSignalDeclaration("ScanCandidates", arguments: [DBusArgument("candidates", "aa{sv}")]),
            // A `Play` answered "still waiting" has ended: `error` is empty when the song started
            // (`status` then says so), else the D-Bus error name, with `message` the reason.
            DBusSignalDeclaration("PlayRequestEnded", arguments: [
                DBusArgument("request", "t"), DBusArgument("error", "s"), DBusArgument("message", "s"), DBusArgument("status", "a{sv}"),
            ]),
        ])
        let object = try DBusObject(interfaces: [interface], callLimits: limits.dbusCallLimits)
        announcer.withLock { $0.object = object }
        return object
    }

    /// One `Play`: the song's outcome as the reply when it comes within `window`; otherwise the
    /// reply is the status now plus `Request` (an id), and the outcome follows as
    /// `PlayRequestEnded` with that id. Either way the request stays this call's: it counts
    /// against the client's bounds and is cancelled if the client leaves the bus.
    private static func play<Control: SpeakerdControl>(
        _ request: PlayRequest, on control: Control, context: DBusMethodCallContext, within window: Duration,
        requests: PlayRequestNumbers, announce: @escaping @Sendable ([DBusValue]) -> Void
    ) async throws -> DBusValue {
        let record = SpeakerdDBusRecords.self
        return try await withThrowingTaskGroup(of: PlayStep.self) { group in
            group.addTask { .played(try await control.play(request)) }
            group.addTask {
                try await Task.sleep(for: window)
                return .windowClosed
            }
            // The song's outcome within the window is the reply, as a plain call's would be (a
            // failure is thrown: it becomes the error reply, and the timer is cancelled with the group).
            if case .played(let report)? = try await group.next() {
                group.cancelAll()
                return record.encode(report)
            }
            // Past the window: answer "accepted, still waiting", then report the outcome by signal.
            let id = requests.next()
            let now = (try? await control.status()) ?? StatusReport(readiness: "starting", message: "Waiting",
                                                                   speaker: nil, playback: .idle)
            try context.answerNow([record.encode(now, pendingRequest: id)])
            do {
                guard case .played(let report)? = try await group.next() else { return record.encode(now) }
                announce([.uint64(id), .string(""), .string(""), record.encode(report)])
            } catch {
                let (name, message) = Self.errorReply(error)
                let after = (try? await control.status()) ?? now
                announce([.uint64(id), .string(name), .string(message), record.encode(after)])
            }
            return record.encode(now)
        }
    }

    /// The error name and message a failed request reports (as its reply would have).
    private static func errorReply(_ error: any Error) -> (String, String) {
        switch error {
        case let error as SpeakerdError:
            if case .remote(let name, let message) = error.dbusError { return (name, message) }
            return (SpeakerdBus.ErrorName.failed, error.description)
        case is CancellationError: return (SpeakerdBus.ErrorName.failed, "the request was cancelled")
        default: return (SpeakerdBus.ErrorName.failed, String(describing: error))
        }
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

    private static func volumeChange(_ text: String) throws(SpeakerdError) -> VolumeChange {
        do { return try VolumeChange(parsing: text) } catch {
            throw .rejected(name: DBusError.Name.invalidArgs, message: error.description)
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
            return PlayRequest(file: owned, displayName: name.isEmpty ? "song" : name, queue: queue, client: context.sender)
        } catch {
            throw .rejected(name: DBusError.Name.invalidArgs, message: error.description)
        }
    }
}

/// What comes first while a `Play` call waits: the song's outcome or the end of the answer window.
private enum PlayStep: Sendable {
    case played(StatusReport)
    case windowClosed
}

/// A reference to an exported object that does not keep it alive.
struct WeakDBusObject {
    weak var object: DBusObject?
}

/// Ids for `Play` requests answered before they ended, unique for the daemon's life.
final class PlayRequestNumbers: Sendable {
    private let last = Atomic<UInt64>(0)
    func next() -> UInt64 { last.add(1, ordering: .relaxed).newValue }
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
