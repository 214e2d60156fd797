import AudioPath
import PlaybackService
import SpeakerdAPI
/// The speaker's hardware volume: `composer-cli volume`. The speaker's care
/// (``SpeakerCareFeature``) owns the level and its memory; the reducer says which speaker and
/// which route it is, from what it observes.
extension SpeakerdDaemon {
    public func volume() async throws(SpeakerdError) -> VolumeReport {
        let (target, route) = try volumeRoute()
        do {
            let (percent, device) = try await features.speakerCare.volume(of: target, on: route)
            return VolumeReport(percent: percent, address: target.address.description, name: target.name, device: device)
        } catch {
            throw Self.rejected(error)
        }
    }

    public func setVolume(_ change: VolumeChange) async throws(SpeakerdError) -> VolumeReport {
        let (target, route) = try volumeRoute()
        do {
            let (percent, device) = try await features.speakerCare.setVolume(change, of: target, on: route)
            return VolumeReport(percent: percent, address: target.address.description, name: target.name, device: device)
        } catch {
            throw Self.rejected(error)
        }
    }

    /// The connected speaker and the route to its audio device, or why there is none.
    private func volumeRoute() throws(SpeakerdError) -> (LinkSnapshot.Target, AudioRoute) {
        guard let target = inputs.link.target, inputs.link.connected else { throw Self.rejected(.noSpeaker) }
        guard case .ready(let route) = inputs.audioPath, playback != nil else { throw Self.rejected(.noAudioDevice(speaker: target.name)) }
        return (target, route)
    }

    private static func rejected(_ error: SpeakerVolumeError) -> SpeakerdError {
        let name = switch error {
        case .noSpeaker: SpeakerdBus.ErrorName.noSpeaker
        case .noAudioDevice: SpeakerdBus.ErrorName.notReady
        case .notAvailable, .failed: SpeakerdBus.ErrorName.failed
        }
        return .rejected(name: name, message: error.description)
    }

    /// The status's volume: only for the speaker whose audio device is there now.
    func statusVolume() async -> Int? {
        guard let volumeNow = await features.speakerCare.volumeNow, case .ready = inputs.audioPath, inputs.link.connected,
              inputs.link.target?.address == volumeNow.address else { return nil }
        return volumeNow.percent
    }
}
