import AudioPath
import PlaybackService
import SpeakerdAPI
/// The speaker's hardware volume: `composer-cli volume`, and the volume each speaker gets back
/// when its audio device appears.
///
/// The level lives on the device (BlueALSA's PCM, the speaker's sink), which passes it on to the
/// speaker; the daemon keeps only what it last set or read (`volumeNow`, for status) and, per
/// speaker, the state file's remembered volume. A speaker never seen before gets `first_volume`
/// instead of whatever it woke up at. A speaker known from before speakerd kept volumes keeps
/// the level it has (the user chose it somewhere), which is remembered from then on.
extension SpeakerdDaemon {
    public func volume() async throws(SpeakerdError) -> VolumeReport {
        let (target, device) = try volumeDevice()
        let percent: Int
        do { percent = try await device.percent() } catch { throw Self.rejected(error) }
        await volumeChanged(to: percent, of: target, remember: true)
        return VolumeReport(percent: percent, address: target.address.description, name: target.name,
                            device: device.deviceDescription)
    }

    public func setVolume(_ change: VolumeChange) async throws(SpeakerdError) -> VolumeReport {
        let (target, device) = try volumeDevice()
        let percent: Int
        do {
            // A step starts from the device's own level: the speaker's buttons may have moved it.
            let current = if case .by = change { try await device.percent() } else { 0 }
            percent = try await device.setPercent(change.applied(to: current))
        } catch {
            throw Self.rejected(error)
        }
        logger.info("volume of \(target.name) (\(target.address)) set to \(percent) % as asked (\(change))")
        await volumeChanged(to: percent, of: target, remember: true)
        return VolumeReport(percent: percent, address: target.address.description, name: target.name,
                            device: device.deviceDescription)
    }

    /// The connected speaker and the volume of its audio device, or why there is none.
    private func volumeDevice() throws(SpeakerdError) -> (LinkSnapshot.Target, any SpeakerVolume) {
        guard let target = inputs.link.target, inputs.link.connected else { throw Self.rejected(.noSpeaker) }
        guard case .ready(let route) = inputs.audioPath, playback != nil else { throw Self.rejected(.noAudioDevice(speaker: target.name)) }
        do throws(SpeakerVolumeError) { return (target, try audio.volume(on: route)) } catch { throw Self.rejected(error) }
    }

    private static func rejected(_ error: SpeakerVolumeError) -> SpeakerdError {
        let name = switch error {
        case .noSpeaker: SpeakerdBus.ErrorName.noSpeaker
        case .noAudioDevice: SpeakerdBus.ErrorName.notReady
        case .notAvailable, .failed: SpeakerdBus.ErrorName.failed
        }
        return .rejected(name: name, message: error.description)
    }

    /// Keeps the level for status and, with `remember`, in the state file for that speaker.
    private func volumeChanged(to percent: Int, of target: LinkSnapshot.Target, remember: Bool) async {
        // Recorded before status shows it: a client that sees the new volume finds it remembered
        // too (status calls run during the write's await, this actor being reentrant).
        if remember {
            do {
                try await stateStore.rememberVolume(percent, of: target.address)
                stateWritten()
            } catch {
                stateWriteFailed(error)
            }
        }
        volumeNow = (target.address, percent)
        await publish()
    }

    /// The status's volume: only for the speaker whose audio device is there now.
    var statusVolume: Int? {
        guard let volumeNow, case .ready = inputs.audioPath, inputs.link.connected,
              inputs.link.target?.address == volumeNow.address else { return nil }
        return volumeNow.percent
    }

    /// Once per link, when the speaker is connected, recorded in the state file (so whether it is
    /// new is known) and its audio device is there, in whatever order these come: sets the
    /// remembered volume, or `first_volume` for a new speaker.
    func considerRestoringVolume() {
        guard inputs.link.connected, let target = inputs.link.target, case .ready = inputs.audioPath,
              rememberedOnLink == linkUps, volumeRestoredOnLink != linkUps, !isWindingDown else { return }
        volumeRestoredOnLink = linkUps
        let link = linkUps
        volumeRestore?.cancel()
        // Off the audio path's follower: a sound server slow to answer must not hold up readiness.
        volumeRestore = Task { [weak self] in await self?.restoreVolume(of: target, onLink: link) }
    }

    private func restoreVolume(of target: LinkSnapshot.Target, onLink link: Int) async {
        let device: any SpeakerVolume
        do {
            // The path may have gone while this task waited for the actor: nothing to restore then.
            guard playback != nil, case .ready(let route) = inputs.audioPath else { return }
            device = try audio.volume(on: route)
        } catch {
            logger.debug("no volume to restore on \(target.name): \(error)")  // e.g. a WAV file output
            return
        }
        let remembered = await stateStore.knownSpeakers.first { $0.address == target.address }?.volume
        let wanted = remembered ?? (newSpeakers.contains(target.address) ? configuration.firstVolume : nil)
        let percent: Int
        do {
            if let wanted { percent = try await device.setPercent(wanted) } else { percent = try await device.percent() }
        } catch {
            logger.notice("could not \(wanted.map { "set the volume to \($0) % on" } ?? "read the volume of") \(target.name) (\(target.address)): \(error)")
            return
        }
        guard !Task.isCancelled, link == linkUps, inputs.link.target?.address == target.address else { return }
        switch (remembered, wanted) {
        case (.some, _): logger.info("restored the volume of \(target.name) (\(target.address)) to \(percent) %")
        case (nil, .some): logger.info("\(target.name) (\(target.address)) is new: volume set to first_volume, \(percent) %")
        case (nil, nil): logger.info("\(target.name) (\(target.address)) keeps its volume, \(percent) %, remembered from now on")
        }
        await volumeChanged(to: percent, of: target, remember: remembered == nil)
    }
}
