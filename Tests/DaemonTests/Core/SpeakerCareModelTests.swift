import AudioPath
import BlueZ
@testable import Daemon
import PropertyBased
import Testing

/// Seeded random event sequences through the speaker's care, its invariants checked after every
/// step. Each number of a sequence picks an event and its arguments, so a failing sequence
/// shrinks to the few events that break the rule.
@Suite("The speaker's care under any order of events")
struct SpeakerCareModelTests {
    typealias Care = SpeakerCare
    static let speakers = [SpeakerCareTests.flip, SpeakerCareTests.charge]
    static let routes = [SpeakerCareTests.sink, AudioRoute.standIn("BlueALSA PCM /org/bluealsa/hci0/dev_11_22_33_AA_BB_DD/a2dpsrc/sink")]

    /// What the model keeps beside the care, from the effects alone.
    struct Model {
        var care = Care(grace: .seconds(4), firstVolume: 30, hasPlayback: true)
        var now = ErasedClock.Instant(offset: .zero)
        var armed: ErasedClock.Instant?
        var everArmed: [ErasedClock.Instant] = []
        var restoring: Care.Restore?
        /// The remembers asked of the state file and not answered yet, oldest first.
        var remembering: [(Int, BluetoothAddress)] = []
        var asks: [Int: Int] = [:]
        var restoresByLink: [Int: Int] = [:]
        var stopped = false
        var link = 0

        /// The event number `code` names, given what the model has seen so far.
        func event(_ code: Int) -> Care.Event {
            let speaker = Self.pick(speakers, code / 8)
            switch code % 8 {
            case 0:
                let paths: [AudioPathState] = [.unknown, SpeakerCareTests.noDevice, .ready(Self.pick(routes, code / 16)),
                                               .notReady(.soundServerUnreachable("no sound server at /run/user/0/pulse/native"))]
                return .observed(.init(target: code / 32 % 3 == 2 ? nil : speaker, connected: code / 96 % 3 != 0,
                                       audioPath: Self.pick(paths, code / 288), link: link + code / 1152 % 2))
            case 1: return .remembered(speaker.address, isNew: code / 8 % 2 == 0, volume: code / 16 % 2 == 0 ? nil : code % 101, onLink: link)
            case 2: return .graceEnded(deadline: code / 8 % 3 == 0 ? now : (armed ?? everArmed.last ?? now))
            case 3:
                let answers: [Care.ProfileAnswer] = [.asked, .refused("br-connection-unknown"), .timedOut(seconds: 10), .cancelled]
                return .profileAnswered(Self.pick(answers, code / 8), target: speaker, onLink: link - code / 32 % 2)
            case 4:
                let results: [Care.RestoreResult] = [.done(percent: code % 101), .noVolume("no hardware volume"), .failed("Access denied")]
                let restore = restoring ?? Care.Restore(target: speaker, route: Self.pick(routes, code / 8), wanted: 50, fromMemory: true, link: link)
                return .restored(Self.pick(results, code / 16), restore)
            case 5:
                switch code / 8 % 3 {
                case 0: return .volumeRead(percent: code % 101, of: speaker.address)
                case 1: return .volumeSet(percent: code % 101, of: speaker, asked: .to(code % 101))
                default:
                    // The state file answers the oldest remember asked of it.
                    guard let (percent, address) = remembering.first else { return .bluezAvailable }
                    return .volumeRemembered(percent: percent, of: address)
                }
            case 6: return code / 8 % 5 == 0 ? .stop : .bluezAvailable
            default: return .graceEnded(deadline: now)  // replaced by time moving, in `apply`
            }
        }

        static func pick<T>(_ values: [T], _ index: Int) -> T { values[index % values.count] }

        /// Feeds the event `code` names (or moves time), and checks every invariant after it.
        mutating func apply(_ code: Int) {
            if code % 8 == 7 {
                now = now.advanced(by: .milliseconds(code % 6_000))
                if code / 8 % 4 == 0 { link += 1 }
                return
            }
            let event = event(code)
            if case .observed(let observation) = event { link = max(link, observation.link) }
            if case .restored = event { restoring = nil }
            let wasArmed = armed, volumeBefore = care.volumeNow
            if case .volumeRemembered = event { remembering.removeFirst() }
            let effects = care.step(event, now: now)
            if case .graceEnded(let deadline) = event, deadline == wasArmed { armed = nil }
            if case .stop = event { stopped = true }

            for effect in effects {
                switch effect {
                case .armGraceTimer(let deadline):
                    #expect(armed == nil, "armed twice without a cancel: \(event)")
                    #expect(deadline > now, "armed for the past")
                    armed = deadline
                    everArmed.append(deadline)
                case .cancelGraceTimer:
                    #expect(armed != nil, "cancelled a timer that was not armed")
                    armed = nil
                case .askForProfile(let target, let onLink):
                    asks[onLink, default: 0] += 1
                    #expect(asks[onLink] == 1, "asked twice on link \(onLink)")
                    let observed = care.observed
                    #expect(observed.connected && observed.target == target && observed.link == onLink,
                            "asked for a speaker not connected now")
                    if case .notReady(.noAudioDevice) = observed.audioPath {} else { Issue.record("asked with the device there") }
                case .restoreVolume(let restore):
                    restoresByLink[restore.link, default: 0] += 1
                    #expect(restoresByLink[restore.link] == 1, "restored twice on link \(restore.link)")
                    #expect(care.observed.audioPath == .ready(restore.route))
                    restoring = restore
                case .cancelVolumeRestore:
                    restoring = nil
                case let .rememberVolume(percent, address):
                    remembering.append((percent, address))
                case .publishStatus:
                    break
                case .log(_, let line):
                    #expect(!line.isEmpty && !line.contains("\n"), "a log line that is not one line")
                }
                if stopped {
                    switch effect {
                    case .armGraceTimer, .askForProfile, .restoreVolume: Issue.record("\(effect) after winding down")
                    default: break
                    }
                }
            }
            #expect(care.isGraceTimerArmed == (armed != nil), "the care and its effects disagree on the timer")
            // Status shows a volume to remember only once the state file keeps it.
            if care.volumeNow != volumeBefore {
                switch event {
                case .volumeRemembered: break
                case .restored(_, let restore) where restore.fromMemory: break
                default: Issue.record("status shows a volume not remembered yet, after \(event)")
                }
                #expect(effects.contains(.publishStatus), "the volume changed and status was not told")
            }
            if stopped { #expect(!care.isGraceTimerArmed && !care.isRestoringVolume, "left armed after winding down") }
        }
    }

    @Test("any sequence: one ask and one restore per link at most, a timer armed only once and never after winding down, status showing a volume only once it is remembered",
          .shrinking(true))
    func invariants() async {
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...20_000).array(of: 1...80)) { codes in
            await Task.yield()  // the suites beside this one get the thread between cases
            var model = Model()
            for code in codes { model.apply(code) }
        }
    }
}
