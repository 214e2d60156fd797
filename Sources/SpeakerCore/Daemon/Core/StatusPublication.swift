import SpeakerdAPI
import Systemd

/// What speakerd publishes, decided in one synchronous step: `READY=1` once, `STATUS=` when the
/// sentence changes and never after `STOPPING=1`, and on the bus only the properties and signals
/// of what changed since the status last published. A value: ``BusFeature`` runs its effects.
struct StatusPublication: Equatable, Sendable {
    enum Event: Equatable, Sendable {
        /// The API answers: requests can be made from now on (they wait in the gate).
        case apiServing(statusLine: String)
        /// The status as it is now.
        case status(StatusReport)
        /// speakerd winds down: `STOPPING=1` is the last word to systemd.
        case stopping(statusLine: String)
    }

    enum Effect: Equatable, Sendable {
        /// To systemd.
        case notify([NotifyMessage])
        /// The `Status` property.
        case statusProperty(String)
        /// The `Readiness` property and `ReadinessChanged`.
        case readiness(String)
        /// The `Speaker` property and `SpeakerChanged`.
        case speaker(StatusReport.Speaker?)
        /// The `Volume` property.
        case volume(Int?)
        /// The `Playback` property and `PlaybackChanged`.
        case playback(StatusReport.Playback)
    }

    private var lastPublished: StatusReport?
    private var readySent = false
    private var stoppingSent = false

    mutating func step(_ event: Event) -> [Effect] {
        switch event {
        case .apiServing(let line):
            guard !readySent else { return [] }
            readySent = true
            return [.notify([.ready, .status(line)])]
        case .stopping(let line):
            stoppingSent = true
            return [.notify([.stopping, .status(line)])]
        case .status(let status):
            let previous = lastPublished
            lastPublished = status
            var effects: [Effect] = []
            if previous?.message != status.message, !stoppingSent { effects.append(.notify([.status(status.message)])) }
            effects.append(.statusProperty(status.message))
            if previous?.readiness != status.readiness { effects.append(.readiness(status.readiness)) }
            if previous?.speaker != status.speaker { effects.append(.speaker(status.speaker)) }
            if previous?.volume != status.volume { effects.append(.volume(status.volume)) }
            if previous?.playback != status.playback { effects.append(.playback(status.playback)) }
            return effects
        }
    }
}
