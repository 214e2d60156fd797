import DBus
import SpeakerdAPI
/// Our own bus connection going away: the one fault speakerd does not ride out in-process.
///
/// When the bus daemon exits or restarts, the connection is gone for good (libdbus does not
/// reconnect, and our name, match rules and exported API went with it), so the daemon has no
/// API left. It reports the loss; `SpeakerdService` then winds it down and exits non-zero so
/// systemd's `Restart=on-failure` brings speakerd back on the new bus. bluetoothd leaving is
/// different: our connection is fine, so the daemon waits for it in place (see `+Events`).
extension SpeakerdDaemon {
    /// Starts following `connection` until it ends; a loss resolves `lostBus`.
    func watchBus(_ connection: DBusConnection) {
        busWatcher?.cancel()
        busWatcher = Task { [weak self] in
            // Waiting holds the connection; shutdown closes it (or cancels this task) first.
            guard await connection.waitUntilEnded() == .lost else { return }
            await self?.busWasLost()
        }
    }

    /// The connection dropped without us closing it. Ignored once shutting down, when a late
    /// drop changes nothing.
    func busWasLost() {
        switch lifecycle {
        case .stopping, .stopped: return
        case .idle, .starting, .running, .blocked: lostBus.succeed(configuration.bus)
        }
    }

    /// Waits until the daemon loses its bus connection and returns that bus; answers at once
    /// if it already has, and returns nil if the waiting task is cancelled first.
    public nonisolated func busLoss() async -> BusSelection? {
        guard case .success(let bus)? = try? await lostBus.result() else { return nil }
        return bus
    }
}
