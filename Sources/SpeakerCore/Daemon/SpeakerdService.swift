import Foundation
import Logging
import ServiceLifecycle

/// speakerd as a swift-service-lifecycle `Service`: runs the coordinator's start-up, keeps it
/// running, and on SIGTERM/SIGINT winds it down (discovery and playback stopped, STOPPING=1).
///
/// A SIGTERM in the middle of start-up cancels the sequence at once (the timeline records
/// "start-up was cancelled") instead of waiting for a slow Connect to finish.
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
        try? await cancelWhenGracefulShutdown { await daemon.start() }
        if let problem = await daemon.fatalProblem {
            await daemon.shutdown()
            state = .stopped
            throw SpeakerdServiceError.cannotServe(problem)
        }
        // Wait for SIGTERM/SIGINT; cancellation of the group ends the wait too.
        try? await gracefulShutdown()
        await daemon.shutdown()
        state = .stopped
    }

    /// Called by the watchdog pacer through the coordinator actor.
    public func heartbeat() async { await daemon.heartbeat() }
}

/// Misuse of the service's lifecycle.
public enum SpeakerdServiceError: Error, Equatable, Sendable, CustomStringConvertible {
    case alreadyStarted
    case cannotServe(String)

    public var description: String {
        switch self {
        case .alreadyStarted: "the speakerd service was started twice"
        case .cannotServe(let problem): problem
        }
    }
}
