import AudioPath
import BlueZ
import Logging
import Readiness
import ServiceLifecycle
import SpeakerdAPI

/// Runs the speaker's care (``SpeakerCare``, where every decision about the profile nudge and
/// the volume is taken): feeds it what the daemon observes and what its effects found, and runs
/// its effects: the grace timer, `ConnectProfile` through the operation queue, the device's
/// volume, the state file, status.
actor SpeakerCareFeature: DaemonFeature {
    typealias Observation = SpeakerCare.Observation

    private var care: SpeakerCare
    private var bluez: (any BlueZClient)?
    private var graceTimer: Task<Void, Never>?
    private var volumeRestore: Task<Void, Never>?

    private let backend: any AudioBackend
    private let stateFile: StateFileFeature
    private let operations: AsyncOperationQueue
    private let clock: ErasedClock
    private let inbox: FeatureInbox
    private let logger: Logger

    init(backend: any AudioBackend, hasPlayback: Bool, stateFile: StateFileFeature, operations: AsyncOperationQueue,
         grace: Duration, firstVolume: Int, clock: ErasedClock, inbox: FeatureInbox, logger: Logger) {
        care = SpeakerCare(grace: grace, firstVolume: firstVolume, hasPlayback: hasPlayback)
        self.backend = backend
        self.stateFile = stateFile
        self.operations = operations
        self.clock = clock
        self.inbox = inbox
        self.logger = logger
    }

    func stop() async { await feed(.stop) }

    /// The BlueZ client to ask for profiles with, once the daemon has one.
    func use(_ bluez: any BlueZClient) async {
        self.bluez = bluez
        await feed(.bluezAvailable)
    }

    /// What was asked for the speaker's profile on link `link`, for status.
    func profileNote(onLink link: Int) -> String? { care.profileNote(onLink: link) }

    /// The connected speaker's volume as last set, restored or read.
    var volumeNow: SpeakerVolumeNow? { care.volumeNow }

    /// What the reducer observes now.
    func observe(_ observation: Observation) async { await feed(.observed(observation)) }

    /// The connected `address` was recorded in the state file on link `link`; `isNew`: it was
    /// not known before (it gets `first_volume`); `volume`: what the state file remembers of it.
    func remembered(_ address: BluetoothAddress, isNew: Bool, volume: Int?, onLink link: Int) async {
        await feed(.remembered(address, isNew: isNew, volume: volume, onLink: link))
    }

    private func feed(_ event: SpeakerCare.Event) async {
        let effects = care.step(event, now: clock.now)
        for effect in effects { await run(effect) }
    }

    private func run(_ effect: SpeakerCare.Effect) async {
        switch effect {
        case .armGraceTimer(let deadline):
            graceTimer?.cancel()
            graceTimer = clock.timer(at: deadline) { [weak self] in await self?.feed(.graceEnded(deadline: deadline)) }
        case .cancelGraceTimer:
            graceTimer?.cancel()
            graceTimer = nil
        case let .askForProfile(target, link):
            guard let bluez else { return }
            let operations = operations, address = target.address
            Task { [weak self] in
                let ticket = await operations.add("a2dp profile \(address)", group: "link", timeout: Self.profileTimeout) { _ in
                    try await bluez.connectProfile(address, uuid: BlueZUUID.a2dpSink)
                }
                let answer: SpeakerCare.ProfileAnswer = switch (try? await ticket.outcome()) ?? .cancelled {
                case .ok: .asked
                case .failed(let why), .skipped(let why): .refused(why)
                case .timedOut: .timedOut(seconds: Int(Self.profileTimeout.components.seconds))
                case .cancelled: .cancelled
                }
                await self?.feed(.profileAnswered(answer, target: target, onLink: link))
            }
        case .restoreVolume(let restore):
            volumeRestore?.cancel()
            // Off the audio path's follower: a sound server slow to answer must not hold up readiness.
            let backend = backend
            volumeRestore = Task { [weak self] in
                let result = await Self.restore(restore, on: backend)
                guard !Task.isCancelled else { return }
                await self?.feed(.restored(result, restore))
            }
        case .cancelVolumeRestore:
            volumeRestore?.cancel()
            volumeRestore = nil
        case let .rememberVolume(percent, address):
            await stateFile.rememberVolume(percent, of: address)
            await feed(.volumeRemembered(percent: percent, of: address))
        case .publishStatus:
            await inbox.send(.statusChanged)
        case let .log(level, line):
            logger.log(level: level, "\(line)")
        }
    }

    /// How long BlueZ may take to answer `ConnectProfile`.
    static let profileTimeout = Duration.seconds(10)

    /// Sets the wanted volume on the restore's device, or reads it when nothing is wanted.
    private static func restore(_ restore: SpeakerCare.Restore, on backend: any AudioBackend) async -> SpeakerCare.RestoreResult {
        let device: any SpeakerVolume
        do {
            device = try backend.volume(on: restore.route)
        } catch {
            return .noVolume(error.description)
        }
        do {
            let percent = if let wanted = restore.wanted { try await device.setPercent(wanted) } else { try await device.percent() }
            return .done(percent: percent)
        } catch {
            return .failed(error.description)
        }
    }

    /// The volume of `route`'s device, the connected `target`'s; remembered.
    func volume(of target: LinkSnapshot.Target, on route: AudioRoute) async throws(SpeakerVolumeError)
        -> (percent: Int, device: String) {
        let device = try backend.volume(on: route)
        let percent = try await device.percent()
        await feed(.volumeRead(percent: percent, of: target.address))
        return (percent, device.deviceDescription)
    }

    /// Sets the volume of `route`'s device as asked; a step starts from the device's own level
    /// (the speaker's buttons may have moved it).
    func setVolume(_ change: VolumeChange, of target: LinkSnapshot.Target, on route: AudioRoute) async throws(SpeakerVolumeError)
        -> (percent: Int, device: String) {
        let device = try backend.volume(on: route)
        let current = if case .by = change { try await device.percent() } else { 0 }
        let percent = try await device.setPercent(change.applied(to: current))
        await feed(.volumeSet(percent: percent, of: target, asked: change))
        return (percent, device.deviceDescription)
    }
}
