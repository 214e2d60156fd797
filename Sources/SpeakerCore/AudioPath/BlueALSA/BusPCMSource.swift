import DBus
import Synchronization

/// BlueALSA's PCMs over the bus the daemon hands over (`use(_:)`), looked up when asked.
///
/// The route is built before start-up connects the bus and is first asked for PCMs after it did,
/// so the player passes the connection along with each speaker it follows; this source keeps
/// the latest one it was given (its own state, not a view into the daemon's).
public final class BusPCMSource: BlueALSAPCMSource {
    private let connection = Mutex<DBusConnection?>(nil)

    public init() {}

    /// Asks BlueALSA over `bus` from now on (nil: no bus yet, or it was lost).
    public func use(_ bus: DBusConnection?) {
        connection.withLock { $0 = bus }
    }

    private var current: BlueALSADBusPCMSource? {
        connection.withLock { $0 }.map { BlueALSADBusPCMSource(connection: $0) }
    }

    public func pcmSets() -> AsyncThrowingStream<[BlueALSAPCM], any Error> {
        guard let source = current else { return AsyncThrowingStream { $0.finish(throwing: Self.noBus) } }
        return source.pcmSets()
    }

    public func serviceStates() -> AsyncThrowingStream<[BlueALSAPCM]?, any Error> {
        guard let source = current else { return AsyncThrowingStream { $0.finish(throwing: Self.noBus) } }
        return source.serviceStates()
    }

    public func volume(ofPCM path: String) -> (any SpeakerVolume)? {
        current?.volume(ofPCM: path)
    }

    public func delay(ofPCM path: String) async -> Duration? {
        await current?.delay(ofPCM: path)
    }

    private static let noBus = BlueALSAError.unavailable(reason: "speakerd has no D-Bus connection yet")
}
