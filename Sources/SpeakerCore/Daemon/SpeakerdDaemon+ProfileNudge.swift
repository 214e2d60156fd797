import BlueZ
/// A connected speaker with no audio device: ask BlueZ, once, for its A2DP profile.
///
/// The most common "connected but no sound" on real boxes: the link is up but the audio profile
/// never came (the speaker offered a headset profile first, or the sound server missed the
/// moment). After `audioDeviceGrace` without an audio device for the connected target, speakerd
/// calls `ConnectProfile(A2DP sink)` on it, once per link (never a disconnect, never a loop), and
/// says so in `status` (`warnings`). A new link, a new target or the device appearing resets it.
extension SpeakerdDaemon {
    /// The speaker to ask for, from what is observed now: connected, without its audio device,
    /// not yet asked on this link. Checked when the timer is armed and again when it fires,
    /// since the world may change during the grace period.
    private var targetToAsk: LinkSnapshot.Target? {
        guard let target = inputs.link.target, inputs.link.connected,
              case .notReady(.noAudioDevice) = inputs.audioPath,
              profileAskedOnLink != linkUps, bluez != nil else { return nil }
        return target
    }

    /// Arms (or disarms) the one-shot timer from what is observed now.
    func considerAskingForProfile() {
        guard let target = targetToAsk else {
            profileNudge?.cancel()
            profileNudge = nil
            return
        }
        guard profileNudge == nil, !isWindingDown else { return }
        let link = linkUps, grace = configuration.audioDeviceGrace, clock = dependencies.clock
        profileNudge = Task { [weak self] in
            do { try await clock.sleep(for: grace) } catch { return }
            await self?.askForProfile(target, onLink: link, after: grace)
        }
    }

    private func askForProfile(_ target: LinkSnapshot.Target, onLink link: Int, after grace: Duration) async {
        profileNudge = nil
        // Still the same link to the same speaker, still without its audio device? If not, the
        // timer starts again from what is observed now (a new link without its device gets its
        // own grace period; nothing else may come along to arm it).
        guard link == linkUps, targetToAsk?.address == target.address, let bluez else {
            considerAskingForProfile()
            return
        }
        profileAskedOnLink = link
        let seconds = Int(grace.components.seconds)
        logger.info("\(target.name) (\(target.address)) is connected but has no audio device after \(seconds) s; asking BlueZ for its A2DP profile")
        let address = target.address
        let ticket = await operations.add("a2dp profile \(address)", group: "link", timeout: .seconds(10)) { _ in
            try await bluez.connectProfile(address, uuid: BlueZUUID.a2dpSink)
        }
        let outcome = (try? await ticket.outcome()) ?? .cancelled
        let result: String = switch outcome {
        case .ok: "asked"
        case .failed(let why), .skipped(let why): "asked; BlueZ answered: \(why)"
        case .timedOut: "asked; BlueZ did not answer within 10 s"
        case .cancelled: "asked; cancelled"
        }
        guard link == linkUps else { return }
        profileNote = "\(target.name) had no audio device \(seconds) s after connecting: \(result) for its A2DP audio profile once"
        await publish()
    }
}
