import AudioPath
import BlueZ
import Logging
import SpeakerdAPI

/// What speakerd does for the connected speaker once it is there, decided in one synchronous
/// step: its A2DP profile asked for when the audio device does not come, and its volume given
/// back. A value: no clock read, no I/O, no task. ``SpeakerCareFeature`` feeds it what happened
/// and runs the effects it returns; each effect's result comes back as an event.
///
/// **The profile nudge.** The most common "connected but no sound" on real boxes: the link is
/// up but the audio profile never came (the speaker offered a headset profile first, or the
/// sound server missed the moment). After `audio_device_grace` without an audio device for the
/// connected target, speakerd calls `ConnectProfile(A2DP sink)` on it, once per link (never a
/// disconnect, never a loop), and says so in `status` (``profileNote(onLink:)``). A new link, a
/// new target or the device appearing disarms the timer.
///
/// **The volume.** The level lives on the device (BlueALSA's PCM, the speaker's sink), which
/// passes it on to the speaker; the care keeps what it last set or read (``volumeNow``, for
/// status). Once per link, when the speaker is connected, recorded in the state file and its
/// audio device is there, in whatever order these come, it gets its remembered volume back; a
/// speaker never seen before gets `first_volume` instead of whatever it woke up at; a speaker
/// known from before speakerd kept volumes keeps the level it has, which is remembered from then on.
struct SpeakerCare: Equatable, Sendable {
    /// The connected speaker as the daemon observes it.
    struct Observation: Equatable, Sendable {
        var target: LinkSnapshot.Target?
        var connected = false
        var audioPath = AudioPathState.unknown
        /// The speaker's links so far (counted as each comes up): "once per link" counts these.
        var link = 0
    }

    /// What BlueZ said to `ConnectProfile`, in the words status gives it.
    enum ProfileAnswer: Equatable, Sendable {
        case asked
        case refused(String)
        case timedOut(seconds: Int)
        case cancelled
    }

    /// What a volume restore found on the device.
    enum RestoreResult: Equatable, Sendable {
        /// The device is at `percent` now (set to what was wanted, or read when nothing was).
        case done(percent: Int)
        /// The route has no volume (a WAV file, the null output): nothing to restore.
        case noVolume(String)
        /// The device refused or did not answer.
        case failed(String)
    }

    /// A restore to run: set `wanted` on `route`'s device (read it when nil).
    struct Restore: Equatable, Sendable {
        var target: LinkSnapshot.Target
        var route: AudioRoute
        var wanted: Int?
        /// Whether `wanted` is the speaker's remembered volume (not `first_volume`).
        var fromMemory: Bool
        var link: Int
    }

    enum Event: Equatable, Sendable {
        /// The daemon has a BlueZ client to ask for profiles with.
        case bluezAvailable
        /// What the daemon observes now, after every change that matters here.
        case observed(Observation)
        /// The connected speaker was recorded in the state file on `link`; `isNew`: it was not
        /// known before; `volume`: the volume the state file remembers for it.
        case remembered(BluetoothAddress, isNew: Bool, volume: Int?, onLink: Int)
        /// The grace timer armed for `deadline` fired.
        case graceEnded(deadline: ErasedClock.Instant)
        /// BlueZ answered the `ConnectProfile` asked for `target` on `link`.
        case profileAnswered(ProfileAnswer, target: LinkSnapshot.Target, onLink: Int)
        /// The restore the care asked for ended.
        case restored(RestoreResult, Restore)
        /// The user's `volume` read the device; `volume N` (or a step) set it.
        case volumeRead(percent: Int, of: BluetoothAddress)
        case volumeSet(percent: Int, of: LinkSnapshot.Target, asked: VolumeChange)
        /// The state file keeps the volume the care asked it to remember.
        case volumeRemembered(percent: Int, of: BluetoothAddress)
        /// The daemon winds down: nothing more is armed or asked.
        case stop
    }

    enum Effect: Equatable, Sendable {
        /// Fire `graceEnded(deadline:)` at `deadline`, replacing any armed grace timer.
        case armGraceTimer(deadline: ErasedClock.Instant)
        case cancelGraceTimer
        /// `ConnectProfile(A2DP sink)` on the speaker; answered by `profileAnswered`.
        case askForProfile(target: LinkSnapshot.Target, onLink: Int)
        /// Replaces any restore under way; answered by `restored`.
        case restoreVolume(Restore)
        case cancelVolumeRestore
        /// The state file keeps `percent` for the speaker; answered by `volumeRemembered`.
        case rememberVolume(Int, of: BluetoothAddress)
        /// Status changed: publish it.
        case publishStatus
        case log(Logger.Level, String)
    }

    /// `audio_device_grace`: how long a connected speaker may lack its audio device.
    let grace: Duration
    /// `first_volume`, for a speaker never seen before.
    let firstVolume: Int
    /// Whether there is a player: without one there is no audio device to care for.
    let hasPlayback: Bool

    private(set) var observed = Observation()
    private var hasBlueZ = false
    private var stopped = false
    /// The armed grace timer: when it fires, and the link and target it was armed for.
    private var graceTimer: GraceTimer?
    private var profileAskedOnLink: Int?
    private var profileNote: ProfileNote?
    /// The connected speaker's volume as last set, restored or read.
    private(set) var volumeNow: SpeakerVolumeNow?
    /// The speakers first connected by this daemon: they get `first_volume`.
    private var newSpeakers: Set<BluetoothAddress> = []
    /// The link whose connection is recorded in the state file, with what it remembers.
    private var remembered: RememberedLink?
    private var volumeRestoredOnLink: Int?
    private var restoreUnderWay = false

    private struct GraceTimer: Equatable, Sendable {
        var deadline: ErasedClock.Instant
        var link: Int
        var target: BluetoothAddress
    }

    private struct ProfileNote: Equatable, Sendable {
        var link: Int
        var text: String
    }

    private struct RememberedLink: Equatable, Sendable {
        var link: Int
        var address: BluetoothAddress
        var volume: Int?
    }

    init(grace: Duration, firstVolume: Int, hasPlayback: Bool) {
        self.grace = grace
        self.firstVolume = firstVolume
        self.hasPlayback = hasPlayback
    }

    /// Whether the grace timer is armed (for the invariant that nothing is armed once stopped).
    var isGraceTimerArmed: Bool { graceTimer != nil }
    /// Whether a restore was asked for and has not answered.
    var isRestoringVolume: Bool { restoreUnderWay }

    /// What was asked for the speaker's profile on link `link`, for status: what was said of an
    /// earlier link no longer holds.
    func profileNote(onLink link: Int) -> String? {
        guard let profileNote, profileNote.link == link else { return nil }
        return profileNote.text
    }

    mutating func step(_ event: Event, now: ErasedClock.Instant) -> [Effect] {
        var effects: [Effect] = []
        switch event {
        case .bluezAvailable:
            hasBlueZ = true
            considerAskingForProfile(now: now, into: &effects)
        case .observed(let observation):
            observed = observation
            considerAskingForProfile(now: now, into: &effects)
            considerRestoringVolume(into: &effects)
        case let .remembered(address, isNew, volume, link):
            if isNew { newSpeakers.insert(address) }
            remembered = RememberedLink(link: link, address: address, volume: volume)
            considerRestoringVolume(into: &effects)
        case .graceEnded(let deadline):
            graceEnded(deadline, now: now, into: &effects)
        case let .profileAnswered(answer, target, link):
            guard link == observed.link else { break }
            let seconds = Int(grace.components.seconds)
            let result = switch answer {
            case .asked: "asked"
            case .refused(let why): "asked; BlueZ answered: \(why)"
            case .timedOut(let limit): "asked; BlueZ did not answer within \(limit) s"
            case .cancelled: "asked; cancelled"
            }
            profileNote = ProfileNote(link: link, text: "\(target.name) had no audio device \(seconds) s after connecting: \(result) for its A2DP audio profile once")
            effects.append(.publishStatus)
        case let .restored(result, restore):
            restoreUnderWay = false
            restored(result, restore, into: &effects)
        case let .volumeRead(percent, address):
            volumeChanged(to: percent, of: address, remember: true, into: &effects)
        case let .volumeSet(percent, target, asked):
            effects.append(.log(.info, "volume of \(target.name) (\(target.address)) set to \(percent) % as asked (\(asked))"))
            volumeChanged(to: percent, of: target.address, remember: true, into: &effects)
        case let .volumeRemembered(percent, address):
            volumeNow = SpeakerVolumeNow(address: address, percent: percent)
            effects.append(.publishStatus)
        case .stop:
            stopped = true
            if graceTimer != nil { effects.append(.cancelGraceTimer) }
            if restoreUnderWay { effects.append(.cancelVolumeRestore) }
            graceTimer = nil
            restoreUnderWay = false
        }
        return effects
    }

    // MARK: - The profile nudge

    /// The speaker to ask for: connected, without its audio device, not yet asked on this link.
    private var targetToAsk: LinkSnapshot.Target? {
        guard let target = observed.target, observed.connected, case .notReady(.noAudioDevice) = observed.audioPath,
              profileAskedOnLink != observed.link, hasBlueZ else { return nil }
        return target
    }

    private mutating func considerAskingForProfile(now: ErasedClock.Instant, into effects: inout [Effect]) {
        guard let target = targetToAsk, !stopped else {
            if graceTimer != nil { effects.append(.cancelGraceTimer) }
            graceTimer = nil
            return
        }
        guard graceTimer == nil else { return }
        let deadline = now.advanced(by: grace)
        graceTimer = GraceTimer(deadline: deadline, link: observed.link, target: target.address)
        effects.append(.armGraceTimer(deadline: deadline))
    }

    private mutating func graceEnded(_ deadline: ErasedClock.Instant, now: ErasedClock.Instant, into effects: inout [Effect]) {
        // A timer disarmed (or re-armed) after it fired: only the armed one counts.
        guard let timer = graceTimer, timer.deadline == deadline else { return }
        graceTimer = nil
        // Still the same link to the same speaker, still without its audio device? If not, the
        // timer starts again from what is observed now (a new link without its device gets its
        // own grace period; nothing else may come along to arm it).
        guard timer.link == observed.link, let target = targetToAsk, target.address == timer.target else {
            considerAskingForProfile(now: now, into: &effects)
            return
        }
        profileAskedOnLink = timer.link
        let seconds = Int(grace.components.seconds)
        effects.append(.log(.info, "\(target.name) (\(target.address)) is connected but has no audio device after \(seconds) s; asking BlueZ for its A2DP profile"))
        effects.append(.askForProfile(target: target, onLink: timer.link))
    }

    // MARK: - The volume

    private mutating func considerRestoringVolume(into effects: inout [Effect]) {
        guard hasPlayback, !stopped, observed.connected, let target = observed.target, case .ready(let route) = observed.audioPath,
              let remembered, remembered.link == observed.link, remembered.address == target.address,
              volumeRestoredOnLink != observed.link else { return }
        volumeRestoredOnLink = observed.link
        let wanted = remembered.volume ?? (newSpeakers.contains(target.address) ? firstVolume : nil)
        restoreUnderWay = true
        effects.append(.restoreVolume(Restore(target: target, route: route, wanted: wanted,
                                              fromMemory: remembered.volume != nil, link: observed.link)))
    }

    private mutating func restored(_ result: RestoreResult, _ restore: Restore, into effects: inout [Effect]) {
        let target = restore.target
        switch result {
        case .noVolume(let why):
            effects.append(.log(.debug, "no volume to restore on \(target.name): \(why)"))
        case .failed(let why):
            let what = restore.wanted.map { "set the volume to \($0) % on" } ?? "read the volume of"
            effects.append(.log(.notice, "could not \(what) \(target.name) (\(target.address)): \(why)"))
        case .done(let percent):
            guard restore.link == observed.link, observed.target?.address == target.address else { return }
            let line = switch (restore.fromMemory, restore.wanted) {
            case (true, _): "restored the volume of \(target.name) (\(target.address)) to \(percent) %"
            case (false, .some): "\(target.name) (\(target.address)) is new: volume set to first_volume, \(percent) %"
            case (false, nil): "\(target.name) (\(target.address)) keeps its volume, \(percent) %, remembered from now on"
            }
            effects.append(.log(.info, line))
            volumeChanged(to: percent, of: target.address, remember: !restore.fromMemory, into: &effects)
        }
    }

    /// Keeps the level for status and, with `remember`, in the state file for that speaker:
    /// status shows it once it is remembered, so a client that sees the new volume finds it
    /// remembered too.
    private mutating func volumeChanged(to percent: Int, of address: BluetoothAddress, remember: Bool,
                                        into effects: inout [Effect]) {
        guard !remember else {
            effects.append(.rememberVolume(percent, of: address))
            if remembered?.address == address { remembered?.volume = percent }
            return
        }
        volumeNow = SpeakerVolumeNow(address: address, percent: percent)
        effects.append(.publishStatus)
    }
}

/// The connected speaker's volume as speakerd last set or read it.
struct SpeakerVolumeNow: Equatable, Sendable {
    var address: BluetoothAddress
    var percent: Int
}
