import DBus
import Readiness
import Synchronization

/// What a playback side needs from the daemon that builds it: the daemon's readiness gate and
/// clock, its bus (once connected) and a sentence saying what it is still doing.
///
/// The gate exists only once the daemon does, and the bus only once start-up connected it, so
/// `DaemonDependencies.makePlayback` receives this rather than being built beforehand.
public struct PlaybackWiring: Sendable {
    public let gate: ReadinessGate<DaemonReadiness>
    public let clock: any Clock<Duration>
    /// The daemon's bus connection, nil until the `bus` start-up step connected it.
    public let bus: @Sendable () -> DBusConnection?
    /// What the daemon is still doing ("Connecting to JBL Flip 5…"), for the play-timeout message.
    public let waitingFor: @Sendable () async -> String

    public init(gate: ReadinessGate<DaemonReadiness>, clock: any Clock<Duration>,
                bus: @escaping @Sendable () -> DBusConnection?, waitingFor: @escaping @Sendable () async -> String) {
        self.gate = gate
        self.clock = clock
        self.bus = bus
        self.waitingFor = waitingFor
    }
}

/// A value the daemon actor keeps current and the playback side reads from outside it (the
/// bus once connected, the status line).
final class LockedSlot<Value: Sendable>: Sendable {
    private let current: Mutex<Value>

    init(_ initial: Value) { current = Mutex(initial) }

    var value: Value {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}

/// BlueALSA's PCMs over the daemon's bus, looked up when asked: the audio path is built before
/// start-up connects the bus, and is first asked for PCMs after it did.
struct DaemonBusPCMSource: BlueALSAPCMSource {
    let bus: @Sendable () -> DBusConnection?

    func pcmSets() -> AsyncThrowingStream<[BlueALSAPCM], any Error> {
        guard let connection = bus() else {
            return AsyncThrowingStream { $0.finish(throwing: BlueALSAError.unavailable(reason: "speakerd has no D-Bus connection yet")) }
        }
        return BlueALSADBusPCMSource(connection: connection).pcmSets()
    }

    func serviceStates() -> AsyncThrowingStream<[BlueALSAPCM]?, any Error> {
        guard let connection = bus() else {
            return AsyncThrowingStream { $0.finish(throwing: BlueALSAError.unavailable(reason: "speakerd has no D-Bus connection yet")) }
        }
        return BlueALSADBusPCMSource(connection: connection).serviceStates()
    }

    func volume(ofPCM path: String) -> (any SpeakerVolume)? {
        bus().flatMap { BlueALSADBusPCMSource(connection: $0).volume(ofPCM: path) }
    }
}
