import AudioPath
import Readiness
import SpeakerdAPI
/// Everything playback readiness depends on, each part kept current by the one owner that
/// observes it: the bus step, BlueZ's adapter (the compatibility gate), the speaker link
/// (``SpeakerLink``), the audio path to that speaker, and the soundfont.
///
/// Readiness is a function of these values (``verdict``), recomputed whenever any of them
/// changes; nothing sets a readiness level directly. That is what keeps readiness true when
/// events arrive in an order nobody scripted: a user's connect during a scan, a late `Connect`
/// success while a start-up step backs off, a step that times out. Whatever happened, the
/// level and the reason are what the world looks like now.
public struct ReadinessInputs: Equatable, Sendable {
    public enum Bluetooth: Equatable, Sendable {
        /// Not looked at yet (start-up has not reached BlueZ).
        case unknown
        /// BlueZ answers and the adapter is powered.
        case ready
        /// The compatibility gate is closed.
        case blocked(CompatibilityProblem)
    }

    public enum Soundfont: Equatable, Sendable {
        case notLoaded(path: String)
        case loading(path: String)
        case loaded
        /// Missing or unusable: the sentence says which file and what to do.
        case failed(String)
        /// This daemon cannot play at all.
        case noEngine
    }

    /// Who chooses the speaker while there is no target.
    public enum Choosing: Equatable, Sendable {
        /// Start-up has not had its go at the known speakers yet.
        case startUp
        /// Scan-and-pick with `auto_pick` is looking for a speaker to connect by itself.
        case autoPickScanning
        /// Nobody but a person: `composer-cli scan`, then `connect`.
        case user
    }

    /// The audio path to the target, as the audio backend last reported it.
    public typealias AudioPath = AudioPathState

    public var bus = false
    public var bluetooth = Bluetooth.unknown
    public var link = LinkSnapshot.none
    /// Who is to choose a speaker while the link has none.
    public var choosing = Choosing.startUp
    public var audioPath = AudioPath.unknown
    public var soundfont: Soundfont

    public init(soundfont: Soundfont) {
        self.soundfont = soundfont
    }

    /// The readiness level and, below `playbackReady`, why.
    public struct Verdict: Equatable, Sendable {
        public var level: DaemonReadiness
        public var waitingFor: NotReadyReason?
    }

    /// Levels in start-up order. The reason is the first in that order (bus, Bluetooth, link,
    /// soundfont, audio path), except that a soundfont or audio-path reason that waiting cannot
    /// get past comes first whatever the link does: a `play` must fail at once with it.
    public var verdict: Verdict {
        let level: DaemonReadiness
        if !bus {
            level = .started
        } else if bluetooth != .ready {
            level = .bus
        } else if !linkCarriesAudio {
            level = .adapter
        } else if soundfont == .loaded, case .ready = audioPath {
            level = .playbackReady
        } else {
            level = .speakerConnected
        }
        guard level != .playbackReady else { return Verdict(level: level, waitingFor: nil) }
        let playbackSide = [soundfontReason, audioPathReason].compactMap { $0 }
        let inOrder = [busReason, bluetoothReason, linkReason].compactMap { $0 } + playbackSide
        let reason = playbackSide.first { !$0.waitingCanSucceed } ?? inOrder.first ?? .starting
        return Verdict(level: level, waitingFor: reason)
    }

    private var busReason: NotReadyReason? { bus ? nil : .starting }

    private var bluetoothReason: NotReadyReason? {
        switch bluetooth {
        case .ready: nil
        case .unknown: .starting
        case .blocked(let problem): .blocked(problem)
        }
    }

    /// The link can carry the speaker's audio: connected, with its services resolved where BlueZ
    /// says (``LinkSnapshot/ready``), or with the speaker's own audio device already there (its
    /// BlueALSA PCM, its sink): that exists only once the A2DP transport is up. Real bluetoothd
    /// 5.66 can leave `ServicesResolved` false for good on a link that dropped and came back at
    /// once (it resolved the services on the first and does not browse again), while the A2DP
    /// transport and the speaker's PCM are up: waiting for the property then waited forever.
    /// A device that is not the speaker's (null, a file, ALSA) proves nothing about the link.
    var linkCarriesAudio: Bool {
        if link.ready { return true }
        guard link.connected, let target = link.target?.address, case .ready(let route) = audioPath else { return false }
        return route.speaker == target
    }

    private var linkReason: NotReadyReason? {
        guard !linkCarriesAudio else { return nil }
        if link.connected, let target = link.target {
            return NotReadyReason(.connecting, "connecting to \(target.name)… (its services are being resolved)",
                                  waitingCanSucceed: true)
        }
        guard let target = link.target else {
            switch choosing {
            case .startUp: return .starting
            case .autoPickScanning: return .lookingForSpeaker
            case .user: return .waitingForPick
            }
        }
        switch link.activity {
        case .heldByUser: return .userDisconnected(target.name)
        case .needsPairing(let why): return .pairingRefused(target.name, address: target.address.description, why)
        case .retrying(let delay): return .unreachable(target.name, retryIn: delay)
        case .idle, .connecting, .asleep: return .connecting(target.name)
        }
    }

    private var soundfontReason: NotReadyReason? {
        switch soundfont {
        case .loaded: nil
        case .notLoaded(let path), .loading(let path): .soundfontLoading(path)
        case .failed(let sentence): .soundfontMissing(sentence)
        case .noEngine: .noPlaybackEngine
        }
    }

    /// Why the audio path keeps playback from being ready, if it does (the reason its problem is).
    var audioPathReason: NotReadyReason? {
        switch audioPath {
        case .ready: nil
        case .notReady(let problem): NotReadyReason(problem)
        case .unknown: link.target.map { .noAudioDevice($0.name, "not checked yet") }
        }
    }
}
