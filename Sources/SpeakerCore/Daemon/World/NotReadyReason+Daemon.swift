import AudioPath
import SpeakerdAPI

/// The reasons only the daemon can name: a BlueZ compatibility problem and an audio path problem
/// (types of the modules below it, which the API's `NotReadyReason` does not see).
extension NotReadyReason {
    public static func blocked(_ problem: CompatibilityProblem) -> NotReadyReason {
        let text = problem.description
        let message = text.prefix(1).lowercased() + text.dropFirst()
        switch problem {
        case .noBlueZ: return NotReadyReason(.noBluetoothd, message, waitingCanSucceed: true)
        case .noAdapter: return NotReadyReason(.noAdapter, message, waitingCanSucceed: true)
        case .adapterBlocked: return NotReadyReason(.adapterBlocked, message, waitingCanSucceed: false)
        case .blueZTooOld: return NotReadyReason(.blueZTooOld, message, waitingCanSucceed: false)
        }
    }

    /// The reason an audio path problem is, as the daemon tells it.
    public init(_ problem: AudioPathProblem) {
        switch problem {
        case let .noAudioDevice(name, detail): self = .noAudioDevice(name, detail)
        case let .soundServerUnreachable(detail): self = .soundServerUnreachable(detail)
        case let .outputUnusable(detail): self = .outputUnusable(detail)
        case let .noBluetoothAudioPath(detail): self = .noBluetoothAudioPath(detail)
        }
    }
}
