import AsyncSignals
import DBus
import SpeakerdAPI
/// Our own bus connection going away (``BusFeature`` reports it, the core judges it: ignored once
/// shutting down): the one fault speakerd does not ride out in-process. `SpeakerdService` then winds the daemon down and exits non-zero so
/// systemd's `Restart=on-failure` brings speakerd back on the new bus.
extension SpeakerdDaemon {
    /// Resolved with the bus when our connection to it is lost (not when we close it).
    nonisolated var lostBus: OneShotSignal<BusSelection, Never> { features.bus.lost }

    /// Waits until the daemon loses its bus connection and returns that bus; answers at once
    /// if it already has, and returns nil if the waiting task is cancelled first.
    public nonisolated func busLoss() async -> BusSelection? {
        guard case .success(let bus)? = try? await lostBus.result() else { return nil }
        return bus
    }
}
