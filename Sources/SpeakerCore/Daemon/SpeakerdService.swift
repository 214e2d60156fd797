import Glibc
import Logging
import ServiceLifecycle
import SpeakerdAPI

/// speakerd as a swift-service-lifecycle `Service`: runs the coordinator's start-up, keeps it
/// running, and on SIGTERM/SIGINT winds it down (discovery and playback stopped, STOPPING=1).
///
/// A SIGTERM in the middle of start-up cancels the sequence at once (the timeline records
/// "start-up was cancelled") instead of waiting for a slow Connect to finish. Losing our own
/// bus connection (at any time, start-up included) winds the daemon down the same way, then
/// `run()` throws `busLost`: speakerd exits non-zero and systemd restarts it.
public actor SpeakerdService: Service {
    private enum State {
        case idle
        case running
        case stopped
    }

    private var state: State = .idle
    public nonisolated let daemon: SpeakerdDaemon

    public init(daemon: SpeakerdDaemon) {
        self.daemon = daemon
    }

    public func run() async throws {
        guard case .idle = state else { throw SpeakerdServiceError.alreadyStarted }
        state = .running
        let daemon = self.daemon
        // Start-up, cut short by SIGTERM/SIGINT or by losing the bus.
        var lostBus = await Self.untilBusLost(daemon) {
            await cancelWhenGracefulShutdown { await daemon.start() }
        }
        if lostBus == nil, let problem = await daemon.fatalProblem {
            await daemon.shutdown()
            state = .stopped
            throw SpeakerdServiceError.cannotServe(problem)
        }
        // Wait for SIGTERM/SIGINT or the bus going away; cancellation of the group ends the wait too.
        if lostBus == nil {
            lostBus = await Self.untilBusLost(daemon) { try? await gracefulShutdown() }
        }
        let failure = lostBus.map(SpeakerdServiceError.busLost)
        await daemon.shutdown()
        // Said once, with the journal's error priority, once the daemon has wound down: it is why
        // we exit, so it is the last line (said before, a BlueZ event the link was still taking in
        // could follow it on a loaded machine: "… disconnected: no reason given", seen in CI).
        if let failure { daemon.logger.critical("\(failure)") }
        state = .stopped
        if let failure { throw failure }
    }

    /// Runs `operation` until it returns or the daemon loses its bus, whichever comes first;
    /// returns the bus if it was lost first (the operation is then cancelled).
    private static func untilBusLost(
        _ daemon: SpeakerdDaemon, _ operation: @escaping @Sendable () async -> Void
    ) async -> BusSelection? {
        await withTaskGroup(of: BusSelection?.self) { group in
            group.addTask { await operation(); return nil }
            group.addTask { await daemon.busLoss() }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Called by the watchdog pacer through the coordinator actor.
    public func heartbeat() async { await daemon.heartbeat() }
}

/// Misuse of the service's lifecycle.
public enum SpeakerdServiceError: Error, Equatable, Sendable, CustomStringConvertible {
    case alreadyStarted
    case cannotServe(String)
    /// Our connection to this bus was lost: no API is left, so speakerd exits to be restarted.
    case busLost(BusSelection)

    public var description: String {
        switch self {
        case .alreadyStarted: "the speakerd service was started twice"
        case .cannotServe(let problem): problem
        case .busLost(let bus):
            "lost the D-Bus connection to \(bus.spokenName); exiting so systemd can restart speakerd"
        }
    }
}

extension BusSelection {
    /// The bus as a sentence names it: "the system bus", or its address.
    var spokenName: String {
        if case .address(let address) = self { return address }
        return "the \(self) bus"
    }
}
