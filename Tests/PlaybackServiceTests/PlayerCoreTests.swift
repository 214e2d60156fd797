import AudioPath
import Configuration
import CustomDump
import MIDI
import Playback
@testable import PlaybackService
import PropertyBased
import Testing

/// The player's decisions as scenarios: what each request, gate level and session report does
/// to the song and the queue, and what the player is told to do, with no session or clock.
@Suite("Player core scenarios")
struct PlayerCoreTests {
    static func song(_ core: inout PlayerCore, _ file: String, seconds: Double = 10, memory: Int = 1_000) -> PlayerCore.PendingSong {
        let written = MIDISong(events: [MIDITimedEvent](), durationSeconds: seconds)
        return PlayerCore.PendingSong(ticket: core.takeTicket(), arranged: ArrangedSong(song: written), file: file,
                                      memory: memory, written: written, arrangement: SongArrangement())
    }

    static func core(_ settings: PlaybackServiceSettings = PlaybackServiceSettings()) -> PlayerCore { PlayerCore(settings: settings) }

    /// A core playing `a.mid` (ticket 0), its speaker ready.
    static func playing(_ settings: PlaybackServiceSettings = PlaybackServiceSettings()) -> PlayerCore {
        var core = core(settings)
        let item = song(&core, "a.mid")
        _ = core.step(.play(item, queue: false), ready: true)
        _ = core.step(.started(ticket: item.ticket), ready: true)
        return core
    }

    static func refusals(_ effects: [PlayerCore.Effect]) -> [PlaybackServiceError] {
        effects.compactMap { if case let .refuse(error) = $0 { error } else { nil } }
    }

    static func logs(_ effects: [PlayerCore.Effect]) -> [String] {
        effects.compactMap { if case let .log(_, line) = $0 { line } else { nil } }
    }

    @Test("a song asked while the speaker is away waits, and at the play timeout fails naming what it waited for; the queue behind it goes too")
    func waitTimesOut() {
        var core = Self.core()
        let item = Self.song(&core, "a.mid")
        _ = core.step(.readiness(PlaybackWait(message: "JBL Flip 5 is off or out of range", waitingCanSucceed: true)), ready: false)
        _ = core.step(.play(item, queue: false), ready: false)
        _ = core.step(.waitBegan(ticket: item.ticket), ready: false)
        #expect(core.current.activity == .waiting)
        _ = core.step(.play(Self.song(&core, "b.mid"), queue: true), ready: false)
        #expect(core.queue.count == 1)
        let ended = core.step(.waitEnded(ticket: item.ticket, .timedOut(after: .seconds(30))), ready: false)
        #expect(Self.refusals(ended) == [.notReady(file: "a.mid", after: .seconds(30), waitingFor: "JBL Flip 5 is off or out of range")])
        #expect(core.queue.isEmpty)
        #expect(core.current.activity == .idle)
    }

    @Test("a play replacing the song: the old session ends before the new song starts, the old one is said replaced where it was heard, and its late reports change nothing")
    func replaceEndsTheOldFirst() throws {
        var core = Self.playing()
        let next = Self.song(&core, "b.mid")
        let effects = core.step(.play(next, queue: false), ready: true)
        let end = try #require(effects.firstIndex { if case .endSession(0) = $0 { true } else { false } })
        let start = try #require(effects.firstIndex { if case .start(_, _, true) = $0 { true } else { false } })
        #expect(end < start)
        #expect(Self.logs(core.step(.sessionEnded(ticket: 0, heardSeconds: 2.94), ready: true)) == ["a.mid replaced by b.mid at 2.9 s"])
        #expect(core.step(.finished(ticket: 0, underflows: 0), ready: true).isEmpty, "a replaced song's end is stale")
        #expect(core.step(.progress(ticket: 0, seconds: 9, latency: nil), ready: true).isEmpty)
        _ = core.step(.started(ticket: next.ticket), ready: true)
        #expect(core.current.file == "b.mid")
        #expect(core.current.activity == .playing)
    }

    @Test("the speaker drops mid-song: paused where it was heard; back, it resumes from the heard position, not from where rendering was")
    func lossResumesFromHeard() throws {
        var core = Self.playing()
        let lost = core.step(.level, ready: false)
        #expect(lost.contains { if case .speakerGone(0, true) = $0 { true } else { false } })
        let paused = core.step(.lostSpeakerPaused(ticket: 0, heardSeconds: 4.7), ready: false)
        #expect(Self.logs(paused) == ["speaker lost: a.mid paused at 4.7 s; it resumes when the speaker is back"])
        #expect(core.current.pauseReason == .speakerLost)
        #expect(core.current.positionSeconds == 4.7)
        let back = core.step(.level, ready: true)
        #expect(back.contains { if case .resumeSession(0, true, "speaker back") = $0 { true } else { false } })
        #expect(core.current.activity == .playing)
        let reopened = core.step(.outputReopened(ticket: 0, unheard: 0.3, renderedSeconds: 5.0), ready: true)
        let seek = try #require(reopened.compactMap { if case let .seekRestriking(0, seconds) = $0 { seconds } else { nil } }.first)
        #expect(abs(seek - 4.7) < 1e-9, "it went on from \(seek), not from the heard 4.7")
    }

    @Test("""
        an output that stops taking audio with the speaker still there is opened again and the song goes on from where it was \
        last heard; a fourth stop with no steady stretch between fails the song with the device's reason, and the queue goes on
        """)
    func stoppedOutputIsOpenedAgain() throws {
        var core = Self.playing()
        let b = Self.song(&core, "b.mid")
        _ = core.step(.play(b, queue: true), ready: true)
        let reason = "audio output pulseaudio sink bluez_output.x stopped taking audio mid-song"

        let first = core.step(.outputStopped(ticket: 0, reason: reason, heardSeconds: 4.2), ready: true)
        #expect(first.contains { if case .restartOutput(0) = $0 { true } else { false } })
        #expect(Self.logs(first) == ["a.mid: its output stopped taking audio at 4.2 s with the speaker still there; opening it again (1 of 3)"])
        #expect(core.current.activity == .playing)
        let reopened = core.step(.outputReopened(ticket: 0, unheard: 0.4, renderedSeconds: 4.6), ready: true)
        let seek = try #require(reopened.compactMap { if case let .seekRestriking(0, seconds) = $0 { seconds } else { nil } }.first)
        #expect(abs(seek - 4.2) < 1e-9, "it went on from \(seek), not from the heard 4.2")

        // Steady for more than ten heard seconds: a new trouble, counted from one again.
        _ = core.step(.progress(ticket: 0, seconds: 15, latency: nil), ready: true)
        #expect(Self.logs(core.step(.outputStopped(ticket: 0, reason: reason, heardSeconds: 15), ready: true)).first?.hasSuffix("(1 of 3)") == true)
        // Then it stops again at once, three times: the last fails the song.
        for (count, heard) in [(2, 15.5), (3, 16.0)] {
            let again = core.step(.outputStopped(ticket: 0, reason: reason, heardSeconds: heard), ready: true)
            #expect(Self.logs(again).first?.hasSuffix("(\(count) of 3)") == true, "\(again)")
        }
        let failed = core.step(.outputStopped(ticket: 0, reason: reason, heardSeconds: 16.2), ready: true)
        let failure = "\(reason) (opened again 3 times; it stopped each time)"
        #expect(Self.logs(failed) == ["playback of a.mid failed: \(failure)"])
        let end = try #require(failed.firstIndex { if case .endSession(0) = $0 { true } else { false } })
        let next = try #require(failed.firstIndex { if case .start(_, nil, false) = $0 { true } else { false } })
        #expect(end < next, "the queued song started before the failed one's session ended")
        #expect(!failed.contains { if case .restartOutput = $0 { true } else { false } })
        #expect(core.currentTicket == b.ticket)
        // The failed song's session ending says nothing more.
        #expect(core.step(.sessionEnded(ticket: 0, heardSeconds: 16.2), ready: true).isEmpty)
    }

    @Test("an output that stops while the speaker is gone is the speaker's loss: paused where heard, no new stream until it is back")
    func stoppedOutputWithTheSpeakerGone() {
        var core = Self.playing()
        let stopped = core.step(.outputStopped(ticket: 0, reason: "gone", heardSeconds: 3.0), ready: false)
        #expect(stopped.contains { if case .speakerGone(0, true) = $0 { true } else { false } })
        #expect(!stopped.contains { if case .restartOutput = $0 { true } else { false } })
        #expect(core.current.pauseReason == .speakerLost)
        #expect(core.step(.level, ready: true).contains { if case .resumeSession(0, true, "speaker back") = $0 { true } else { false } })
    }

    @Test("a song the user paused before its stopped output was reported keeps its pause; their resume opens it again")
    func stoppedOutputOfAPausedSong() {
        var core = Self.playing()
        _ = core.step(.pause, ready: true)
        #expect(core.step(.outputStopped(ticket: 0, reason: "gone", heardSeconds: 3.0), ready: true).isEmpty)
        #expect(core.current.pauseReason == .user)
        #expect(core.step(.resume, ready: true).contains { if case .resumeSession(0, _, "resumed") = $0 { true } else { false } })
    }

    @Test("the user's pause outlives the speaker's loss and return; their resume opens the speaker's output again")
    func userPauseHolds() {
        var core = Self.playing()
        _ = core.step(.pause, ready: true)
        _ = core.step(.sessionPaused(ticket: 0, seconds: 3.2), ready: true)
        let gone = core.step(.level, ready: false)
        #expect(gone.contains { if case .speakerGone(0, false) = $0 { true } else { false } })
        _ = core.step(.level, ready: true)
        #expect(core.current.pauseReason == .user, "the speaker's return undid the user's pause")
        let resumed = core.step(.resume, ready: true)
        #expect(resumed.contains { if case .resumeSession(0, true, "resumed") = $0 { true } else { false } })
    }

    @Test("with on_speaker_lost = stop the song stops where it was heard and stays stopped when the speaker is back")
    func stopOnLoss() {
        var core = Self.playing(PlaybackServiceSettings(onSpeakerLost: .stop))
        let lost = core.step(.level, ready: false)
        #expect(lost.contains { if case .endSession(0) = $0 { true } else { false } })
        #expect(Self.logs(core.step(.sessionEnded(ticket: 0, heardSeconds: 1.25), ready: false))
            == ["speaker lost: a.mid stopped at 1.3 s (on_speaker_lost = stop)"])
        _ = core.step(.level, ready: true)
        #expect(core.current.activity == .stopped)
        #expect(core.current.positionSeconds == 1.25)
    }

    @Test("the queue's limits refuse a song that would pass them; a queued song starts when the one before finishes or fails")
    func queueLimitsAndChaining() {
        var core = Self.playing(PlaybackServiceSettings(queueLimits: PlayQueueLimits(songs: 1, bytes: 1 << 20)))
        let b = Self.song(&core, "b.mid")
        _ = core.step(.play(b, queue: true), ready: true)
        let refused = core.step(.play(Self.song(&core, "c.mid"), queue: true), ready: true)
        #expect(Self.refusals(refused).count == 1)
        if case .busy(file: "c.mid", _)? = Self.refusals(refused).first {} else { Issue.record("not refused as busy: \(refused)") }
        let finished = core.step(.finished(ticket: 0, underflows: 2), ready: true)
        #expect(finished.contains { if case .start(_, nil, false) = $0 { true } else { false } }, "the queued song waits without a timeout")
        #expect(Self.logs(finished).contains { $0.contains("2 gaps") })
        _ = core.step(.started(ticket: b.ticket), ready: true)
        _ = core.step(.failed(ticket: b.ticket, reason: "the device went away", heardSeconds: 1), ready: true)
        #expect(core.current.activity == .failed)
        #expect(core.current.error == "the device went away")
    }

    @Test("controls that cannot act are refused in one line: nothing playing, or not started yet; a song that cannot wait fails at once")
    func refusals() {
        var core = Self.core()
        #expect(Self.refusals(core.step(.pause, ready: false)) == [.nothingPlaying(operation: "pause")])
        #expect(Self.refusals(core.step(.resume, ready: false)) == [.nothingPlaying(operation: "resume")])
        #expect(Self.refusals(core.step(.skip, ready: false)) == [.nothingPlaying(operation: "skip")])
        let item = Self.song(&core, "a.mid")
        _ = core.step(.play(item, queue: false), ready: false)
        #expect(Self.refusals(core.step(.pause, ready: false)) == [.notStartedYet(operation: "pause", file: "a.mid")])
        #expect(core.controlRefusal("tempo") == .notStartedYet(operation: "tempo", file: "a.mid"))
        _ = core.step(.waitBegan(ticket: item.ticket), ready: false)
        let held = core.step(.readiness(PlaybackWait(message: "you disconnected it", waitingCanSucceed: false)), ready: false)
        #expect(held.contains { if case .cancelWait(item.ticket) = $0 { true } else { false } })
        #expect(core.abandonment(of: item) == .cannotWait(file: "a.mid", reason: "you disconnected it"))
        #expect(Self.refusals(core.step(.play(Self.song(&core, "b.mid"), queue: false), ready: false))
            == [.cannotWait(file: "b.mid", reason: "you disconnected it")])
    }

    @Test("keep_alive plays while the ready speaker is idle, and stops before a song's start")
    func keepAlive() throws {
        var core = Self.core(PlaybackServiceSettings(keepAlive: true))
        #expect(core.step(.level, ready: true).contains { if case .keepAlive(true) = $0 { true } else { false } })
        let play = core.step(.play(Self.song(&core, "a.mid"), queue: false), ready: true)
        let halt = try #require(play.firstIndex { if case .keepAlive(false) = $0 { true } else { false } })
        let start = try #require(play.firstIndex { if case .start = $0 { true } else { false } })
        #expect(halt < start)
    }

    @Test("after the shutdown a waiting song hears so, and no song is taken")
    func shutdown() {
        var core = Self.core()
        let item = Self.song(&core, "a.mid")
        _ = core.step(.play(item, queue: false), ready: false)
        _ = core.step(.waitBegan(ticket: item.ticket), ready: false)
        _ = core.step(.shutdown, ready: false)
        #expect(core.abandonment(of: item) == .shuttingDown)
        #expect(Self.refusals(core.step(.play(Self.song(&core, "b.mid"), queue: false), ready: true)) == [.shuttingDown])
        _ = core.step(.shutDownComplete, ready: true)
        #expect(core.currentTicket == nil)
    }
}

/// Seeded random sequences of requests, gate levels and session reports through the player core,
/// its rules checked after every step; a failing sequence shrinks to the few events that break it.
@Suite("The player core under any order of events")
struct PlayerCoreModelTests {
    struct Model {
        var core: PlayerCore
        /// Tickets whose session the core asked to end and that have not reported yet.
        var ending: Set<Int> = []
        var lastTicket = -1
        var keepAliveOn = false
        var shutDown = false
        /// New streams asked for the current song (the model's heard seconds stay under the ten of
        /// a steady stretch, so every stop counts as the same trouble).
        var restartsInARow = 0

        init(code: Int) {
            core = PlayerCore(settings: PlaybackServiceSettings(onSpeakerLost: code % 3 == 0 ? .stop : .pause,
                                                                keepAlive: code % 2 == 0,
                                                                queueLimits: PlayQueueLimits(songs: 3, bytes: 1 << 20)))
        }

        mutating func event(_ code: Int) -> PlayerCore.Event {
            let current = core.currentTicket ?? lastTicket
            // Mostly about the current song; now and then a report for an older one (stale).
            let ticket = code / 32 % 4 == 0 ? max(0, current - 1) : current
            let seconds = Double(code / 128 % 20) / 2
            switch code % 26 {
            case 0, 1:
                let item = PlayerCoreTests.song(&core, "song\(code % 7).mid", memory: 300_000)
                lastTicket = item.ticket
                return .play(item, queue: code / 32 % 2 == 0)
            case 2: return .skip
            case 3: return .clearQueue
            case 4: return .stop
            case 5: return .pause
            case 6: return .resume
            case 7: return .readiness(code / 32 % 3 == 0 ? nil : PlaybackWait(message: "away", waitingCanSucceed: code / 32 % 3 == 1))
            case 8, 9: return .level
            case 10: return .waitBegan(ticket: ticket)
            case 11: return .waitEnded(ticket: ticket, [.reached, .timedOut(after: .seconds(30)), .cancelled][code / 32 % 3])
            case 12, 13: return .started(ticket: ticket)
            case 14: return .startFailed(ticket: ticket, reason: "no output")
            case 15: return .progress(ticket: ticket, seconds: seconds, latency: 0.1)
            case 16: return .finished(ticket: ticket, underflows: 0)
            case 17: return .failed(ticket: ticket, reason: "device gone", heardSeconds: seconds)
            case 18: return .sessionEnded(ticket: ending.min() ?? ticket, heardSeconds: seconds)
            case 19: return .sessionPaused(ticket: ticket, seconds: seconds)
            case 20: return .lostSpeakerPaused(ticket: ticket, heardSeconds: seconds)
            case 21: return .outputReopened(ticket: ticket, unheard: Double(code / 64 % 4) / 10, renderedSeconds: seconds)
            case 22: return .position(ticket: ticket, seconds: seconds)
            case 23, 24: return .outputStopped(ticket: ticket, reason: "stopped taking audio", heardSeconds: seconds)
            default: return code / 32 % 8 == 0 ? .shutdown : .startCancelled(ticket: ticket)
            }
        }

        mutating func apply(_ code: Int) {
            let ready = code / 1024 % 3 != 0
            let event = event(code)
            let before = core
            let effects = core.step(event, ready: ready)

            if case .shutdown = event { shutDown = true }
            for effect in effects {
                switch effect {
                case let .start(item, _, _):
                    #expect(!shutDown, "a song taken after the shutdown")
                    #expect(core.currentTicket == item.ticket, "started \(item.file), which is not the current song")
                    #expect(!keepAliveOn, "a song started while the keep-alive held the speaker")
                case let .endSession(ticket): ending.insert(ticket)
                case let .restartOutput(ticket):
                    // A new stream only for the playing song, with its speaker there, a bounded number of times in a row.
                    #expect(ready && core.isPlaying(ticket), "a new stream for \(ticket) while \(core.phase)")
                    restartsInARow += 1
                    #expect(restartsInARow <= PlayerCore.outputReopens, "\(restartsInARow) new streams with no steady stretch between")
                case let .keepAlive(on): keepAliveOn = on
                case let .seekRestriking(_, seconds):
                    // The song goes on from where the listener stopped hearing it, never from where rendering was.
                    if case let .outputReopened(_, unheard, rendered) = event {
                        #expect(abs(seconds - max(0, rendered - unheard)) < 1e-9, "went on from \(seconds), not the heard \(rendered - unheard)")
                    } else {
                        Issue.record("a seek back that no reopened output asked for, after \(event)")
                    }
                default: break
                }
            }
            if case let .sessionEnded(ticket, _) = event { ending.remove(ticket) }
            if before.currentTicket != core.currentTicket { restartsInARow = 0 }
            if keepAliveOn { #expect(core.currentTicket == nil, "the keep-alive plays beside \(core.current.file ?? "a song")") }

            // A user's pause is never undone by the speaker: only their resume plays it again.
            if case .paused(_, .user) = before.phase, case .playing = core.phase {
                if case .resume = event {} else { Issue.record("a user's pause undone by \(event)") }
            }
            // A song paused by its speaker's loss knows where it was heard, not where rendering was.
            if case let .lostSpeakerPaused(ticket, heard) = event, let song = core.playingSong, song.ticket == ticket {
                #expect(core.lastPosition == song.songPosition(heard), "paused at \(core.lastPosition), heard at \(heard)")
            }
            // A report for a song that is not the current one changes nothing.
            if let ticket = Self.reportTicket(event), ticket != before.currentTicket {
                #expect(effects.allSatisfy { if case .keepAlive = $0 { true } else { false } }, "a stale \(event) did \(effects)")
                #expect(core.current == before.current, "a stale \(event) changed the status")
            }
            // Every request is answered: refused, queued, or started for its caller.
            if case .play = event {
                let answers = effects.count { effect in
                    switch effect {
                    case .refuse, .start(_, _, true): true
                    default: false
                    }
                }
                #expect(answers == 1 || core.queue.count == before.queue.count + 1, "a play got \(answers) answers")
            }
            #expect(core.queue.count <= 3, "the queue passed its limit")
        }

        /// The ticket a session or gate report is about (nil for requests, and for a session's end,
        /// which outlives its song).
        static func reportTicket(_ event: PlayerCore.Event) -> Int? {
            switch event {
            case let .waitBegan(ticket), let .waitEnded(ticket, _), let .started(ticket), let .startFailed(ticket, _),
                 let .startCancelled(ticket), let .position(ticket, _), let .progress(ticket, _, _), let .finished(ticket, _),
                 let .failed(ticket, _, _), let .sessionPaused(ticket, _), let .lostSpeakerPaused(ticket, _),
                 let .outputReopened(ticket, _, _), let .adjusted(ticket, _, _, _), let .outputStopped(ticket, _, _):
                ticket
            default: nil
            }
        }
    }

    @Test("any sequence: a song starts only when current and never beside the keep-alive, a user's pause is theirs, a lost song knows where it was heard, stale reports change nothing, every play answered, a stopped output opened again only for the playing song with its speaker there and a bounded number of times",
          .shrinking(true))
    func invariants() async {
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...60_000).array(of: 1...80)) { codes in
            await Task.yield()  // the suites beside this one get the thread between cases
            var model = Model(code: codes.first ?? 0)
            for code in codes { model.apply(code) }
        }
    }
}
