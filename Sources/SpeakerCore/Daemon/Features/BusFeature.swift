import AsyncSignals
import Configuration
import DBus
import Logging
import ServiceLifecycle
import SpeakerdAPI
import Systemd

/// The bus speakerd serves its API on, and what it publishes: the API object's properties and
/// signals on the bus, `STATUS=`, `READY=1` and `STOPPING=1` to systemd.
///
/// What is published is ``StatusPublication``'s to decide (only what changed since the last
/// status published, `READY=1` once, no `STATUS=` after `STOPPING=1`); this runs it. Our own connection
/// going away is the one fault speakerd does not ride out in-process: when the bus daemon exits
/// or restarts, the connection is gone for good (libdbus does not reconnect, and our name,
/// match rules and exported API went with it). The loss is reported; the reducer decides
/// whether it still matters (not while winding down) and resolves `lost`, and
/// `SpeakerdService` then winds the daemon down and exits non-zero so systemd's
/// `Restart=on-failure` brings speakerd back on the new bus. bluetoothd leaving is different:
/// our connection is fine, so the daemon waits for it in place.
actor BusFeature: DaemonFeature {
    /// The connection, once start-up's bus step has made it.
    private(set) var connection: DBusConnection?
    private var apiObject: DBusObject?
    private var watch: Task<Void, Never>?
    private var publication = StatusPublication()
    /// Resolved with the bus when our connection to it is lost (not when we close it).
    nonisolated let lost = OneShotSignal<BusSelection, Never>()
    private nonisolated let notifier: SystemdNotifier?
    private let inbox: FeatureInbox
    private let logger: Logger

    init(notifier: SystemdNotifier?, inbox: FeatureInbox, logger: Logger) {
        self.notifier = notifier
        self.inbox = inbox
        self.logger = logger
    }

    /// Stops watching at the end; the connection itself is closed last of all (`close`), once
    /// everything that talks over it has stopped.
    func stop() {
        watch?.cancel()
        watch = nil
    }

    /// Serves `object` on `connection` from now on, and follows the connection until it ends.
    func serve(_ object: DBusObject, on connection: DBusConnection) {
        self.connection = connection
        apiObject = object
        watch?.cancel()
        let inbox = inbox
        watch = Task {
            // Waiting holds the connection; `close` closes it (or the end cancels this task) first.
            guard await connection.waitUntilEnded() == .lost else { return }
            await inbox.send(.busLost)
        }
    }

    /// Unexports the API, gives up our name and closes the connection (the daemon's last step).
    func close() async {
        watch?.cancel()
        watch = nil
        if let connection {
            connection.unexport(at: SpeakerdBus.path)
            _ = try? await connection.releaseName(SpeakerdBus.name)
            connection.close()
        }
        apiObject = nil
    }

    /// READY=1 once the API answers: requests can be made from then on (they wait in the gate).
    func sendReadyOnce(status: String) { run(publication.step(.apiServing(statusLine: status))) }

    /// Tells systemd and the bus what changed since the last status published.
    func publish(_ status: StatusReport) { run(publication.step(.status(status))) }

    /// `STOPPING=1` and the last status line: no `STATUS=` follows it (a status published while
    /// the features wind down would).
    func stopping(status: String) { run(publication.step(.stopping(statusLine: status))) }

    private func run(_ effects: [StatusPublication.Effect]) {
        let records = SpeakerdDBusRecords.self
        let interface = SpeakerdBus.interface
        for effect in effects {
            if case .notify(let messages) = effect {
                notify(messages)
                continue
            }
            guard let apiObject, let connection else { continue }
            switch effect {
            case .notify:
                break
            case .statusProperty(let message):
                try? apiObject.setProperty("Status", of: interface, to: .string(message))
            case .readiness(let readiness):
                try? apiObject.setProperty("Readiness", of: interface, to: .string(readiness))
                try? connection.emitSignal(path: SpeakerdBus.path, interface: interface, member: "ReadinessChanged",
                                           arguments: [.string(readiness)])
            case .speaker(let speaker):
                let value = speaker.map(records.encode) ?? .properties([:])
                try? apiObject.setProperty("Speaker", of: interface, to: value)
                try? connection.emitSignal(path: SpeakerdBus.path, interface: interface, member: "SpeakerChanged", arguments: [value])
            case .volume(let volume):
                try? apiObject.setProperty("Volume", of: interface, to: records.volumeProperty(volume))
            case .playback(let playback):
                let value = records.encode(playback)
                try? apiObject.setProperty("Playback", of: interface, to: value)
                try? connection.emitSignal(path: SpeakerdBus.path, interface: interface, member: "PlaybackChanged", arguments: [value])
            }
        }
    }

    /// Sends `messages` to systemd (when started by it); a failure is a warning, never fatal.
    private func notify(_ messages: [NotifyMessage]) {
        guard let notifier else { return }
        do { try notifier.send(messages) } catch { logger.warning("\(error.description)") }
    }
}
