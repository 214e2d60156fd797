import Foundation
import Logging
import ServiceLifecycle

/// The daemon's coordinator: runs start-up, keeps the speaker, serves the API, shuts down.
///
/// An actor with an explicit lifecycle; the watchdog's heartbeat hops onto it, so a stalled
/// coordinator stops the pings and systemd restarts the daemon.
public actor SpeakerdService: Service {
    private enum State {
        case idle
        case starting
        case running
        case stopping
        case stopped
    }

    private var state: State = .idle
    public let configuration: DaemonConfiguration
    private let notifier: SystemdNotifier?
    private let logger: Logger
    private let stateStore: StateStore

    public init(configuration: DaemonConfiguration, notifier: SystemdNotifier?, logger: Logger) {
        self.configuration = configuration
        self.notifier = notifier
        self.logger = logger
        self.stateStore = StateStore(directory: configuration.stateDirectory, logger: logger)
    }

    public func run() async throws {
        guard case .idle = state else { throw SpeakerdServiceError.alreadyStarted }
        state = .starting
        notify(.status("Loading known speakers…"))
        let outcome = await stateStore.load()
        logger.info("state: \(outcome)")
        state = .running
        notify([.ready, .status("Running; \(await stateStore.knownSpeakers.count) known speaker(s)")])
        // Wait for SIGTERM/SIGINT; cancellation of the group ends the wait too.
        try? await gracefulShutdown()
        state = .stopping
        notify([.stopping, .status("Stopping…")])
        state = .stopped
    }

    /// Called by the watchdog pacer; returning proves the actor is not stalled.
    public func heartbeat() {}

    private func notify(_ message: NotifyMessage) { notify([message]) }

    private func notify(_ messages: [NotifyMessage]) {
        guard let notifier else { return }
        do { try notifier.send(messages) } catch {
            logger.warning("\(error.description)")
        }
    }
}

/// Misuse of the coordinator's lifecycle.
public enum SpeakerdServiceError: Error, Equatable, Sendable, CustomStringConvertible {
    case alreadyStarted

    public var description: String {
        switch self {
        case .alreadyStarted: "the speakerd service was started twice"
        }
    }
}
