import Logging
import ServiceLifecycle

/// How often systemd expects `WATCHDOG=1`, read from `WATCHDOG_USEC` / `WATCHDOG_PID`.
public struct WatchdogSettings: Equatable, Sendable {
    /// systemd's timeout; we ping at half of it, as sd_watchdog_enabled(3) advises.
    public let timeout: Duration
    public var pingInterval: Duration { timeout / 2 }

    public init(timeout: Duration) { self.timeout = timeout }

    /// Nil when the watchdog is off, malformed, or meant for another process
    /// (`WATCHDOG_PID` set and not ours: systemd aimed it at a parent or child).
    public init?(environment: [String: String], processID: Int32) {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], !pid.isEmpty, Int32(pid) != processID { return nil }
        self.timeout = .microseconds(Int64(clamping: usec))
    }
}

/// Sends `WATCHDOG=1` at half the watchdog timeout for as long as the daemon is healthy.
///
/// Each ping first asks `heartbeat`, which the daemon implements by hopping onto its main
/// actor: if that actor is stalled the ping never goes out and systemd restarts us, which
/// is the whole point of a watchdog. A `Service`, so it stops with the `ServiceGroup`.
public struct WatchdogPacer<C: Clock>: Service where C.Duration == Duration {
    public let settings: WatchdogSettings
    private let clock: C
    private let heartbeat: @Sendable () async -> Void
    private let ping: @Sendable () throws -> Void

    public init(settings: WatchdogSettings, clock: C,
                heartbeat: @escaping @Sendable () async -> Void,
                ping: @escaping @Sendable () throws -> Void) {
        self.settings = settings
        self.clock = clock
        self.heartbeat = heartbeat
        self.ping = ping
    }

    /// A pacer that pings through `notifier`.
    /// A failed send is logged and the pacing goes on: the daemon's work matters more than
    /// a notification socket that went away, and systemd acts on missing pings anyway.
    public init(settings: WatchdogSettings, clock: C, notifier: SystemdNotifier, logger: Logger,
                heartbeat: @escaping @Sendable () async -> Void) {
        self.init(settings: settings, clock: clock, heartbeat: heartbeat) {
            do { try notifier.send(.watchdog) } catch { logger.warning("watchdog: \(error)") }
        }
    }

    public func run() async throws {
        let clock = clock, interval = settings.pingInterval
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await heartbeat()
            try ping()
            do {
                try await cancelWhenGracefulShutdown { try await clock.sleep(for: interval) }
            } catch is CancellationError {
                return
            }
        }
    }
}
