import DBus
/// The small part of systemd-logind's `org.freedesktop.login1.Manager` that speakerd needs:
/// suspend/resume notifications and sleep delay inhibitors.
///
/// logind is optional (containers, minimal images): every call maps "nobody owns the name"
/// to ``LogindError/notRunning`` so callers can treat it as a no-op instead of a failure.
public struct LogindClient: Sendable {
    public static let busName = "org.freedesktop.login1"
    public static let objectPath: DBusObjectPath = "/org/freedesktop/login1"
    public static let managerInterface = "org.freedesktop.login1.Manager"

    /// The name given to logind as the inhibitor's owner ("who").
    public static let inhibitorOwner = "speakerd"

    public let connection: DBusConnection
    private let callTimeout: Duration

    public init(connection: DBusConnection, callTimeout: Duration = .seconds(5)) {
        self.connection = connection
        self.callTimeout = callTimeout
    }

    /// Whether logind currently owns its name on the bus.
    public func isRunning() async -> Bool {
        (try? await connection.nameOwner(of: Self.busName)) != nil
    }

    /// Suspend and resume as they happen. The match rule is on the bus before this returns and
    /// lives exactly as long as the returned sequence; it works even if logind starts later.
    public func sleepEvents() async throws(LogindError) -> LogindSleepEvents {
        do {
            let signals = try await connection.signals(matching: DBusMatchRule(
                sender: Self.busName, path: Self.objectPath, interface: Self.managerInterface,
                member: "PrepareForSleep"))
            return LogindSleepEvents(signals: signals)
        } catch {
            throw .bus(method: "PrepareForSleep subscription", error)
        }
    }

    /// Takes a *delay* inhibitor on sleep: logind waits (up to its `InhibitDelayMaxSec`) for us
    /// to close the returned lock before suspending, so in-flight work can finish cleanly.
    ///
    /// - Throws: ``LogindError/notRunning`` when logind is not on the bus.
    public func inhibitDelay(why: String) async throws(LogindError) -> SleepInhibitorLock {
        let reply: [DBusValue]
        do {
            reply = try await connection.call(
                destination: Self.busName, path: Self.objectPath, interface: Self.managerInterface, method: "Inhibit",
                arguments: [.string("sleep"), .string(Self.inhibitorOwner), .string(why), .string("delay")],
                timeout: callTimeout)
        } catch .remote(let name, _) where name == DBusError.Name.serviceUnknown || name == DBusError.Name.nameHasNoOwner {
            throw .notRunning
        } catch {
            throw .bus(method: "Inhibit", error)
        }
        guard reply.count == 1, case .unixFD(let descriptor) = reply[0] else {
            throw .unexpectedReply(method: "Inhibit", detail: "expected one file descriptor (h), got (\(reply.signature.rawValue))")
        }
        return SleepInhibitorLock(why: why, descriptor: descriptor)
    }
}

/// `PrepareForSleep` signals as ``SleepEvent``s; malformed signals are skipped.
public struct LogindSleepEvents: AsyncSequence, Sendable {
    public typealias Element = SleepEvent
    public typealias Failure = Never

    let signals: DBusSignalStream

    /// Ends the sequence and removes its match rule now rather than when it is released.
    public func cancel() { signals.cancel() }

    public func makeAsyncIterator() -> Iterator { Iterator(base: signals.makeAsyncIterator()) }

    public struct Iterator: AsyncIteratorProtocol {
        var base: DBusSignalStream.Iterator

        public mutating func next() async -> SleepEvent? {
            while let signal = await base.next() {
                if let event = Self.event(from: signal) { return event }
            }
            return nil
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> SleepEvent? {
            while let signal = await base.next(isolation: actor) {
                if let event = Self.event(from: signal) { return event }
            }
            return nil
        }

        static func event(from signal: DBusSignal) -> SleepEvent? {
            guard let first = signal.arguments.first, case .bool(let start) = first.unwrappingVariants else { return nil }
            return start ? .preparingForSleep : .resumed
        }
    }
}
