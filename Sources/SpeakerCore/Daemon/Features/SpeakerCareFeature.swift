import AudioPath
import BlueZ
import Logging
import Readiness
import ServiceLifecycle
import SpeakerdAPI

/// What speakerd does for the connected speaker once it is there: its A2DP profile asked for
/// when the audio device does not come, and its volume (set, read, remembered, restored).
///
/// **The profile nudge.** The most common "connected but no sound" on real boxes: the link is
/// up but the audio profile never came (the speaker offered a headset profile first, or the
/// sound server missed the moment). After `audio_device_grace` without an audio device for the
/// connected target, speakerd calls `ConnectProfile(A2DP sink)` on it, once per link (never a
/// disconnect, never a loop), and says so in `status` (`note`). A new link, a new target or the
/// device appearing resets it.
///
/// **The volume.** The level lives on the device (BlueALSA's PCM, the speaker's sink), which
/// passes it on to the speaker; this keeps only what it last set or read (`volumeNow`, for
/// status) and, per speaker, the state file's remembered volume. Once per link, when the speaker
/// is connected, recorded in the state file and its audio device is there, in whatever order
/// these come, it gets its remembered volume back; a speaker never seen before gets
/// `first_volume` instead of whatever it woke up at; a speaker known from before speakerd kept
/// volumes keeps the level it has, which is remembered from then on.
///
/// The reducer tells it what is observed (`observe`), after every change that matters here;
/// both timers are judged again from the latest observation when they fire.
actor SpeakerCareFeature: DaemonFeature {
    /// What this feature acts on, as the reducer observes it.
    struct Observation: Sendable {
        var target: LinkSnapshot.Target?
        var connected = false
        var audioPath = AudioPathState.unknown
        /// The speaker's links so far (counted as each comes up): "once per link" counts these.
        var link = 0
    }

    private var observed = Observation()
    private var bluez: (any BlueZClient)?
    /// The link on which the profile was asked for already, the timer before asking, and what
    /// was asked (a status note).
    private var profileAskedOnLink: Int?
    private(set) var profileNudge: Task<Void, Never>?
    private var profileNote: (link: Int, text: String)?
    /// The connected speaker's volume as last set, restored or read; the speakers first connected
    /// by this daemon (they get `first_volume`); the link whose connection is recorded in the
    /// state file, the link whose volume was restored already, and the restore under way.
    private(set) var volumeNow: (address: BluetoothAddress, percent: Int)?
    private var newSpeakers: Set<BluetoothAddress> = []
    private var rememberedOnLink: Int?
    private var volumeRestoredOnLink: Int?
    private var volumeRestore: Task<Void, Never>?
    private var stopped = false

    private let backend: any AudioBackend
    /// Whether there is a player: without one there is no audio device to care for.
    private let hasPlayback: Bool
    private let stateFile: StateFileFeature
    private let operations: AsyncOperationQueue
    private let grace: Duration
    private let firstVolume: Int
    private let clock: any Clock<Duration>
    private let inbox: FeatureInbox
    private let logger: Logger

    init(backend: any AudioBackend, hasPlayback: Bool, stateFile: StateFileFeature, operations: AsyncOperationQueue,
         grace: Duration, firstVolume: Int, clock: any Clock<Duration>, inbox: FeatureInbox, logger: Logger) {
        self.backend = backend
        self.hasPlayback = hasPlayback
        self.stateFile = stateFile
        self.operations = operations
        self.grace = grace
        self.firstVolume = firstVolume
        self.clock = clock
        self.inbox = inbox
        self.logger = logger
    }

    func stop() {
        stopped = true
        profileNudge?.cancel()
        profileNudge = nil
        volumeRestore?.cancel()
        volumeRestore = nil
    }

    /// The BlueZ client to ask for profiles with, once the daemon has one.
    func use(_ bluez: any BlueZClient) { self.bluez = bluez }

    /// What was asked for the speaker's profile on link `link`, for status: what was said of an
    /// earlier link no longer holds.
    func profileNote(onLink link: Int) -> String? {
        guard let profileNote, profileNote.link == link else { return nil }
        return profileNote.text
    }

    /// What the reducer observes now: arms or disarms the profile timer, and restores the volume
    /// when its moment has come.
    func observe(_ observation: Observation) {
        observed = observation
        considerAskingForProfile()
        considerRestoringVolume()
    }

    /// The connected `address` was recorded in the state file on link `link`; `isNew`: it was
    /// not known before (it gets `first_volume`).
    func remembered(_ address: BluetoothAddress, isNew: Bool, onLink link: Int) {
        if isNew { newSpeakers.insert(address) }
        rememberedOnLink = link
        considerRestoringVolume()
    }

    // MARK: - The profile nudge

    /// The speaker to ask for: connected, without its audio device, not yet asked on this link.
    private var targetToAsk: LinkSnapshot.Target? {
        guard let target = observed.target, observed.connected, case .notReady(.noAudioDevice) = observed.audioPath,
              profileAskedOnLink != observed.link, bluez != nil else { return nil }
        return target
    }

    private func considerAskingForProfile() {
        guard let target = targetToAsk else {
            profileNudge?.cancel()
            profileNudge = nil
            return
        }
        guard profileNudge == nil, !stopped else { return }
        let link = observed.link, grace = grace, clock = clock
        profileNudge = Task { [weak self] in
            do { try await clock.sleep(for: grace) } catch { return }
            await self?.askForProfile(target, onLink: link)
        }
    }

    private func askForProfile(_ target: LinkSnapshot.Target, onLink link: Int) async {
        profileNudge = nil
        // Still the same link to the same speaker, still without its audio device? If not, the
        // timer starts again from what is observed now (a new link without its device gets its
        // own grace period; nothing else may come along to arm it).
        guard link == observed.link, targetToAsk?.address == target.address, let bluez else {
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
        guard link == observed.link else { return }
        profileNote = (link, "\(target.name) had no audio device \(seconds) s after connecting: \(result) for its A2DP audio profile once")
        await inbox.send(.statusChanged)
    }

    // MARK: - The volume

    /// The volume of `route`'s device, the connected `target`'s; remembered.
    func volume(of target: LinkSnapshot.Target, on route: AudioRoute) async throws(SpeakerVolumeError)
        -> (percent: Int, device: String) {
        let device = try backend.volume(on: route)
        let percent = try await device.percent()
        await volumeChanged(to: percent, of: target, remember: true)
        return (percent, device.deviceDescription)
    }

    /// Sets the volume of `route`'s device as asked; a step starts from the device's own level
    /// (the speaker's buttons may have moved it).
    func setVolume(_ change: VolumeChange, of target: LinkSnapshot.Target, on route: AudioRoute) async throws(SpeakerVolumeError)
        -> (percent: Int, device: String) {
        let device = try backend.volume(on: route)
        let current = if case .by = change { try await device.percent() } else { 0 }
        let percent = try await device.setPercent(change.applied(to: current))
        logger.info("volume of \(target.name) (\(target.address)) set to \(percent) % as asked (\(change))")
        await volumeChanged(to: percent, of: target, remember: true)
        return (percent, device.deviceDescription)
    }

    /// Keeps the level for status and, with `remember`, in the state file for that speaker.
    private func volumeChanged(to percent: Int, of target: LinkSnapshot.Target, remember: Bool) async {
        // Recorded before status shows it: a client that sees the new volume finds it remembered too.
        if remember { await stateFile.rememberVolume(percent, of: target.address) }
        volumeNow = (target.address, percent)
        await inbox.send(.statusChanged)
    }

    private func considerRestoringVolume() {
        guard observed.connected, let target = observed.target, case .ready = observed.audioPath,
              rememberedOnLink == observed.link, volumeRestoredOnLink != observed.link, !stopped else { return }
        volumeRestoredOnLink = observed.link
        let link = observed.link
        volumeRestore?.cancel()
        // Off the audio path's follower: a sound server slow to answer must not hold up readiness.
        volumeRestore = Task { [weak self] in await self?.restoreVolume(of: target, onLink: link) }
    }

    private func restoreVolume(of target: LinkSnapshot.Target, onLink link: Int) async {
        let device: any SpeakerVolume
        do {
            // The path may have gone while this task waited for the actor: nothing to restore then.
            guard hasPlayback, case .ready(let route) = observed.audioPath else { return }
            device = try backend.volume(on: route)
        } catch {
            logger.debug("no volume to restore on \(target.name): \(error)")  // e.g. a WAV file output
            return
        }
        let remembered = await stateFile.knownSpeakers.first { $0.address == target.address }?.volume
        let wanted = remembered ?? (newSpeakers.contains(target.address) ? firstVolume : nil)
        let percent: Int
        do {
            if let wanted { percent = try await device.setPercent(wanted) } else { percent = try await device.percent() }
        } catch {
            logger.notice("could not \(wanted.map { "set the volume to \($0) % on" } ?? "read the volume of") \(target.name) (\(target.address)): \(error)")
            return
        }
        guard !Task.isCancelled, link == observed.link, observed.target?.address == target.address else { return }
        switch (remembered, wanted) {
        case (.some, _): logger.info("restored the volume of \(target.name) (\(target.address)) to \(percent) %")
        case (nil, .some): logger.info("\(target.name) (\(target.address)) is new: volume set to first_volume, \(percent) %")
        case (nil, nil): logger.info("\(target.name) (\(target.address)) keeps its volume, \(percent) %, remembered from now on")
        }
        await volumeChanged(to: percent, of: target, remember: remembered == nil)
    }
}
