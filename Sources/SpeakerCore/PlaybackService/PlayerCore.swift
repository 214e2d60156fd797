import AudioPath
import Configuration
import DequeModule
import Logging
import MIDI
import Playback
import SpeakerdAPI

/// The player's decisions, in one synchronous step: the queue and its limits, which song owns
/// the speaker and in what state (waiting, starting, playing, paused by the user or by a lost
/// speaker, stopped, failed), who is refused and why, where a song is (the heard position, never
/// the rendered one, when the speaker went), what is said and published, and when the keep-alive
/// plays. ``Player`` feeds it and runs the effects: the gate's waits, the outputs and sessions.
///
/// Every step carries the gate's level as the shell observed it (`ready`). A result that comes
/// back for a song that is no longer the current one (replaced or stopped while its work ran) is
/// stale and changes nothing: that is the one place such results are told apart.
public struct PlayerCore: Sendable {
    /// A validated song that has not started yet; `ticket` identifies its request.
    public struct PendingSong: Sendable {
        public let ticket: Int
        /// The song as it plays: arranged by the composer's controls at `play`, if any.
        public let arranged: ArrangedSong
        public let file: String
        /// What the parsed song takes in memory, for the queue's limit (see `Player.play`).
        public let memory: Int
        /// The song as written, which the live controls arrange again from where it is.
        public let written: MIDISong
        /// The controls `arranged` was laid out with.
        public let arrangement: SongArrangement

        public var song: MIDISong { arranged.song }
    }

    /// The song that owns a session: started, playing or paused.
    public struct CurrentSong: Sendable {
        public let ticket: Int
        public let file: String
        public var durationSeconds: Double
        /// The song as written, and the controls it plays with now.
        public let written: MIDISong
        public var arrangement: SongArrangement
        /// The speaker went away while the song was paused by the user, so its output may be
        /// gone with the speaker's sink: resuming opens the speaker's output again first.
        public var outputMayBeGone = false
        /// The output stopped taking audio this many times with no steady stretch between
        /// (`PlayerCore.steadyOutputSeconds`), and where it last did (the session's heard seconds).
        var outputStops = 0
        var lastOutputStop: Double?

        /// A position on the session's timeline as the status tells it: in the written song's
        /// seconds, so bars and beats are the same whether the controls came with `play` or live.
        public func songPosition(_ timeline: Double) -> Double {
            arrangement.songSeconds(atArranged: timeline, in: written)
        }

        /// Bar and beat at `position` (the written song's seconds).
        func musicalPosition(at position: Double) -> StatusReport.MusicalPosition? {
            guard let bars = written.bars, bars.barCount > 0 else { return nil }
            let seconds = min(position, written.durationSeconds)
            let place = bars.position(atSeconds: seconds)
            return StatusReport.MusicalPosition(bar: min(place.bar, bars.barCount), beat: place.bar > bars.barCount ? 1 : place.beat,
                                                bars: bars.barCount,
                                                bpm: arrangement.heardQuarterNotesPerMinute(of: written, atSeconds: seconds))
        }

        var speakerLeft: CurrentSong {
            var song = self
            song.outputMayBeGone = true
            return song
        }
    }

    public enum Phase: Sendable {
        case idle
        /// Parked in the readiness gate.
        case waiting(PendingSong)
        /// Past the gate (or about to wait): its output and session are being built.
        case starting(PendingSong)
        case playing(CurrentSong)
        case paused(CurrentSong, PlaybackSnapshot.PauseReason)
        /// The last song was stopped early, at `position`.
        case stopped(file: String, position: Double, duration: Double)
        /// The last song's output failed mid-song, at `position`; `reason` is one line.
        case failed(file: String, reason: String, position: Double, duration: Double)
        /// Shut down: no more songs.
        case shutDown
    }

    /// How a gate wait ended.
    public enum WaitOutcome: Sendable, Equatable {
        case reached
        case timedOut(after: Duration)
        case cancelled
    }

    public enum Event: Sendable {
        /// A song read and validated, to replace what plays or (`queue`) to wait its turn.
        case play(PendingSong, queue: Bool)
        case skip
        case clearQueue
        case stop
        case pause
        case resume
        /// The daemon's word on what songs wait for (nil: nothing), and the gate's level with it.
        case readiness(PlaybackWait?)
        /// The gate's level moved (the shell's watcher).
        case level
        /// Songs from now on play to `speaker`, on `route` while its path is ready.
        case route(TargetSpeaker?, AudioRoute?)
        /// The song's start found the gate below `.playbackReady`: it parks there.
        case waitBegan(ticket: Int)
        case waitEnded(ticket: Int, WaitOutcome)
        /// The song's session renders its first audio.
        case started(ticket: Int)
        case startFailed(ticket: Int, reason: String)
        case startCancelled(ticket: Int)
        /// The session's position: `heard` (the listener's) or where rendering is.
        case position(ticket: Int, seconds: Double)
        case progress(ticket: Int, seconds: Double, latency: Double?)
        case finished(ticket: Int, underflows: Int)
        case failed(ticket: Int, reason: String, heardSeconds: Double)
        /// An ended song's session stopped; `heardSeconds` is where the listener stopped hearing it.
        case sessionEnded(ticket: Int, heardSeconds: Double)
        /// The user's pause reached the session; it rendered up to `seconds` (what the device
        /// holds plays out, so that is where the listener stops).
        case sessionPaused(ticket: Int, seconds: Double)
        /// The speaker's loss reached the paused session; the listener last heard `heardSeconds`.
        case lostSpeakerPaused(ticket: Int, heardSeconds: Double)
        /// The song's output was opened again after the speaker came back: `unheard` seconds its
        /// old output held went with it, and rendering stood at `renderedSeconds`.
        case outputReopened(ticket: Int, unheard: Double, renderedSeconds: Double)
        /// The song's device stopped taking audio while it played; the session paused it, holding
        /// it for a new stream, and the listener last heard `heardSeconds`. `reason` is the
        /// device's one-line failure.
        case outputStopped(ticket: Int, reason: String, heardSeconds: Double)
        /// A live control was laid out and is in the session: the song goes on with `arrangement`.
        case adjusted(ticket: Int, SongArrangement, at: Double, said: String?)
        case shutdown
        /// The song that was playing at the shutdown has ended: nothing plays again.
        case shutDownComplete
    }

    public enum Effect: Sendable {
        case publish(PlaybackSnapshot)
        case log(Logger.Level, String)
        /// The request is refused (thrown to its caller).
        case refuse(PlaybackServiceError)
        /// Take `song` through the gate and into a session, for the caller waiting on it
        /// (`timeout`: the play timeout) or, with no caller, in a task of its own (a queued song).
        case start(PendingSong, timeout: Duration?, awaited: Bool)
        /// Cancel the gate wait of a song abandoned.
        case cancelWait(ticket: Int)
        /// Cancel the start of a song abandoned: its session, if built, is stopped.
        case cancelStart(ticket: Int)
        /// End a started song's session; the shell reports `sessionEnded` with the heard position.
        case endSession(ticket: Int)
        /// Pause the session for the user; the shell reports `sessionPaused`.
        case pauseSession(ticket: Int)
        /// The speaker went: the session's output goes with it, and (`pause`) the session pauses;
        /// the shell reports `lostSpeakerPaused` then.
        case speakerGone(ticket: Int, pause: Bool)
        /// Resume the session; first (`reopen`) open the speaker's output again where the backend's
        /// output goes with the speaker, reporting `outputReopened`. `after` names why for the log.
        case resumeSession(ticket: Int, reopen: Bool, after: String)
        /// The song's output stopped taking audio while the speaker is still there: open it again
        /// on the route (a new stream), report `outputReopened`, and resume the session.
        case restartOutput(ticket: Int)
        /// Seek the song to `seconds` (written), striking again the notes sounding there.
        case seekRestriking(ticket: Int, seconds: Double)
        /// Play the keep-alive signal (`true`) or stop it.
        case keepAlive(Bool)
    }

    /// What is said of a song a request (or the speaker's loss) ended.
    enum Said: Sendable {
        /// "x.mid on Speaker (ADDR) stopped at 2.9 s": the words after the song.
        case ended(String)
        /// `on_speaker_lost = stop` ended it.
        case speakerLost
    }

    /// What an ended song leaves when its session has stopped.
    struct Ending: Sendable {
        let song: CurrentSong
        /// What the journal says once its position is known; nil: said elsewhere.
        let said: Said?
        /// The status then shows it stopped (nothing replaced it).
        let reportAsStopped: Bool
    }

    /// How many times a song's output is opened again after it stopped taking audio with the
    /// speaker still there, before the song fails: a sound server's Bluetooth node that failed
    /// once (seen with PipeWire's, under load) plays on a new stream, a dead one fails each time.
    public static let outputReopens = 3
    /// Heard seconds after which a stopped output counts as a new trouble, not the same one again.
    public static let steadyOutputSeconds = 10.0

    let settings: PlaybackServiceSettings
    public private(set) var phase = Phase.idle
    public private(set) var queue: Deque<PendingSong> = []
    private var nextTicket = 0
    /// Why a request ended before its song started; its caller reads and removes it.
    private var abandoned: [Int: PlaybackServiceError] = [:]
    private var ending: [Int: Ending] = [:]
    /// The position last learnt from the session (progress, pause, status), written seconds.
    public private(set) var lastPosition: Double = 0
    private var lastLatency: Double?
    public private(set) var speaker: TargetSpeaker?
    public private(set) var route: AudioRoute?
    /// What the daemon waits for before songs can play, as it last said.
    private var waiting: PlaybackWait?
    /// The gate's level at the last step.
    private var ready = false
    private var shuttingDown = false
    private var keepAlivePlaying = false

    public init(settings: PlaybackServiceSettings) {
        self.settings = settings
    }

    /// The next request's ticket.
    public mutating func takeTicket() -> Int {
        defer { nextTicket += 1 }
        return nextTicket
    }

    // MARK: - Queries

    /// The ticket of the song that is waiting, starting, playing or paused.
    public var currentTicket: Int? {
        switch phase {
        case let .waiting(item), let .starting(item): item.ticket
        case let .playing(current), let .paused(current, _): current.ticket
        case .idle, .stopped, .failed, .shutDown: nil
        }
    }

    /// The song playing or paused now.
    public var playingSong: CurrentSong? {
        switch phase {
        case let .playing(current), let .paused(current, _): current
        default: nil
        }
    }

    /// Whether the song of `ticket` is playing (not paused, not ended).
    public func isPlaying(_ ticket: Int) -> Bool {
        if case let .playing(song) = phase { song.ticket == ticket } else { false }
    }

    /// A live control laid out on `song`, from where the song is (`timeline`, on the session's
    /// own timeline): the song and controls it goes on with, and where that is in the written
    /// song. A control the song cannot take (no such bar or track, a tempo out of range) is
    /// refused in one line.
    public func arranging(_ control: LiveControl, on song: CurrentSong, at timeline: Double,
                          restrikingHeldNotes: Bool) throws(PlaybackServiceError) -> (ArrangedSong, SongArrangement, here: Double) {
        // Where the song is, in the written song's seconds: a song played with controls (a tempo,
        // a count-in, a loop's passes) is elsewhere on its own timeline.
        let here = song.arrangement.songSeconds(atArranged: timeline, in: song.written)
        do {
            var applied = try control.applied(to: song.arrangement, at: here, in: song.written,
                                              passesLeft: song.arrangement.passesLeft(atArranged: timeline, in: song.written))
            applied.restrikesHeldNotes = restrikingHeldNotes
            let arranged = try applied.arranged(song.written, limits: settings.readLimits)
            applied.restrikesHeldNotes = false
            return (arranged, applied, here)
        } catch {
            throw .controlRefused(operation: control.description, file: song.file, reason: error.description)
        }
    }

    /// Why a queued request for `file` taking `memory` bytes (nil: not read yet) may not join
    /// the queue now; nil when it may, or when it would not queue (nothing current).
    public func queueRefusal(for file: String, memory: Int?) -> String? {
        guard currentTicket != nil else { return nil }
        return settings.queueLimits.refusal(file: file, count: queue.count, held: queue.reduce(0) { $0 + $1.memory }, adding: memory)
    }

    /// Why a live control cannot be taken now (nil: a song is playing or paused).
    public func controlRefusal(_ operation: String) -> PlaybackServiceError? {
        switch phase {
        case .playing, .paused: nil
        case let .waiting(item), let .starting(item): .notStartedYet(operation: operation, file: item.file)
        case .idle, .stopped, .failed, .shutDown: .nothingPlaying(operation: operation)
        }
    }

    /// What a request whose song was abandoned before it started is told (read once).
    public mutating func abandonment(of item: PendingSong) -> PlaybackServiceError {
        abandoned.removeValue(forKey: item.ticket) ?? .replaced(file: item.file, by: "a newer request")
    }

    /// The snapshot as of now, with the position last learnt.
    public var current: PlaybackSnapshot { snapshot(of: phase) }

    /// What the status says of `phase`, with the queue and the position last learnt.
    private func snapshot(of phase: Phase) -> PlaybackSnapshot {
        let queued = queue.map { StatusReport.QueuedSong(file: $0.file, durationSeconds: $0.song.durationSeconds) }
        switch phase {
        case .idle, .shutDown:
            return PlaybackSnapshot(activity: .idle, queued: queued)
        case let .waiting(item), let .starting(item):
            return PlaybackSnapshot(activity: .waiting, file: item.file, positionSeconds: 0,
                                    durationSeconds: item.song.durationSeconds, queued: queued)
        case let .playing(current):
            var snapshot = PlaybackSnapshot(activity: .playing, file: current.file, positionSeconds: lastPosition,
                                            durationSeconds: current.durationSeconds, queued: queued)
            snapshot.controls = current.arrangement.controls
            snapshot.musicalPosition = current.musicalPosition(at: lastPosition)
            snapshot.latencySeconds = lastLatency
            return snapshot
        case let .paused(current, reason):
            var snapshot = PlaybackSnapshot(activity: .paused, file: current.file, positionSeconds: lastPosition,
                                            durationSeconds: current.durationSeconds, pauseReason: reason, queued: queued)
            snapshot.controls = current.arrangement.controls
            snapshot.musicalPosition = current.musicalPosition(at: lastPosition)
            return snapshot
        case let .stopped(file, position, duration):
            return PlaybackSnapshot(activity: .stopped, file: file, positionSeconds: position, durationSeconds: duration, queued: queued)
        case let .failed(file, reason, position, duration):
            return PlaybackSnapshot(activity: .failed, file: file, positionSeconds: position, durationSeconds: duration,
                                    queued: queued, error: reason)
        }
    }

    // MARK: - The step

    public mutating func step(_ event: Event, ready: Bool) -> [Effect] {
        self.ready = ready
        var effects: [Effect] = []
        switch event {
        case let .play(item, wantsQueue):
            play(item, queue: wantsQueue, into: &effects)
        case .skip:
            guard currentTicket != nil else {
                effects.append(.refuse(.nothingPlaying(operation: "skip")))
                break
            }
            let next = queue
            queue.removeAll()
            end(abandoningWith: { .replaced(file: $0, by: "the next song (skip)") }, reportAsStopped: next.isEmpty,
                said: .ended(next.first.map { "skipped for \($0.file)" } ?? "skipped; nothing was queued"), into: &effects)
            queue = next
            startNextQueued(into: &effects)
            publish(into: &effects)
        case .clearQueue:
            guard !queue.isEmpty else { break }
            effects.append(.log(.info, "cleared the queue (\(queue.count) song\(queue.count == 1 ? "" : "s"))"))
            queue.removeAll()
            publish(into: &effects)
        case .stop:
            queue.removeAll()
            end(abandoningWith: { .stoppedBeforeStart(file: $0) }, reportAsStopped: true, said: .ended("stopped"), into: &effects)
        case .pause:
            pause(into: &effects)
        case .resume:
            resume(into: &effects)
        case let .readiness(waiting):
            let before = self.waiting
            self.waiting = waiting
            if let waiting, !waiting.waitingCanSucceed, waiting != before, case let .waiting(item) = phase {
                // Waiting can no longer succeed (the user disconnected, the soundfont is gone…):
                // the client hears why now, not at its timeout, and the queue behind it goes too.
                let failure = PlaybackServiceError.cannotWait(file: item.file, reason: waiting.message)
                queue.removeAll()
                end(abandoningWith: { _ in failure }, reportAsStopped: false, said: nil, into: &effects)
                publish(into: &effects)
            }
            reconcileWithSpeaker(into: &effects)
        case .level:
            reconcileWithSpeaker(into: &effects)
        case let .route(speaker, route):
            self.speaker = speaker
            self.route = route
        case let .waitBegan(ticket):
            guard case let .starting(item) = phase, item.ticket == ticket else { break }
            phase = .waiting(item)
            publish(into: &effects)
        case let .waitEnded(ticket, outcome):
            guard case let .waiting(item) = phase, item.ticket == ticket else { break }
            switch outcome {
            case .reached:
                phase = .starting(item)
            case .timedOut, .cancelled:
                // Everything queued behind it would wait for the same absent speaker: it goes too.
                phase = .idle
                queue.removeAll()
                publish(into: &effects)
                let failure: PlaybackServiceError = if case let .timedOut(timeout) = outcome {
                    .notReady(file: item.file, after: timeout, waitingFor: waiting?.message ?? "starting…")
                } else {
                    .cancelled(file: item.file)
                }
                effects.append(.refuse(failure))
            }
        case let .started(ticket):
            guard case let .starting(item) = phase, item.ticket == ticket else { break }
            let current = CurrentSong(ticket: item.ticket, file: item.file, durationSeconds: item.written.durationSeconds,
                                      written: item.written, arrangement: item.arrangement)
            phase = .playing(current)
            lastPosition = current.songPosition(0)
            lastLatency = nil
            // Said when the song starts, not when it was asked for: a queued song may never play.
            effects.append(.log(.info, "playing \(item.file)\(onSpeaker)"))
            publish(into: &effects)
            // The speaker may have dropped while the song was starting.
            reconcileWithSpeaker(into: &effects)
        case let .startFailed(ticket, _):
            guard case let .starting(item) = phase, item.ticket == ticket else { break }
            phase = .idle
            publish(into: &effects)
            startNextQueued(into: &effects)
        case let .startCancelled(ticket):
            guard case let .starting(item) = phase, item.ticket == ticket else { break }
            phase = .idle
            publish(into: &effects)
        case let .position(ticket, seconds):
            if let song = playingSong, song.ticket == ticket { lastPosition = song.songPosition(seconds) }
        case let .progress(ticket, seconds, latency):
            guard let song = playingSong, song.ticket == ticket else { break }
            lastPosition = song.songPosition(seconds)
            lastLatency = latency
            publish(into: &effects)
        case let .finished(ticket, underflows):
            guard case let .playing(song) = phase, song.ticket == ticket else { break }
            // Where the song as played ends, in the written song (a `--to`, a loop's end).
            lastPosition = song.songPosition(.greatestFiniteMagnitude)
            phase = .idle
            effects.append(.log(.info, "finished playing \(song.file)\(onSpeaker)"))
            if underflows > 0 {
                effects.append(.log(.warning, "\(song.file) was heard with \(underflows) gap\(underflows == 1 ? "" : "s"): the sound server ran out of audio while it played (is the machine too busy?)"))
            }
            publish(into: &effects)
            startNextQueued(into: &effects)
        case let .failed(ticket, reason, heard):
            guard let song = playingSong, song.ticket == ticket else { break }
            lastPosition = song.songPosition(heard)
            fail(song, reason: reason, into: &effects)
        case let .sessionEnded(ticket, heard):
            guard let ended = ending.removeValue(forKey: ticket) else { break }
            let position = ended.song.songPosition(heard)
            switch ended.said {
            case let .ended(words)?:
                effects.append(.log(.info, "\(ended.song.file)\(onSpeaker) \(words) at \(Self.loggedSeconds(position))"))
            case .speakerLost?:
                effects.append(.log(.notice, "speaker lost: \(ended.song.file) stopped at \(Self.loggedSeconds(position)) (on_speaker_lost = stop)"))
            case nil:
                break
            }
            if case .idle = phase {
                // Nothing took its place meanwhile: the status says where it stopped.
                phase = .stopped(file: ended.song.file, position: position, duration: ended.song.durationSeconds)
                lastPosition = position
                if ended.reportAsStopped { publish(into: &effects) }
            } else if ended.reportAsStopped {
                // A newer song took its place: its watchers still hear where the old one stopped,
                // before the new one is said.
                effects.append(.publish(snapshot(of: .stopped(file: ended.song.file, position: position,
                                                              duration: ended.song.durationSeconds))))
            }
        case let .sessionPaused(ticket, seconds):
            guard case let .paused(song, .user) = phase, song.ticket == ticket else { break }
            lastPosition = song.songPosition(seconds)
            effects.append(.log(.info, "paused \(song.file)\(onSpeaker) at \(Self.loggedSeconds(lastPosition))"))
            publish(into: &effects)
        case let .lostSpeakerPaused(ticket, heard):
            guard let song = playingSong, song.ticket == ticket else { break }
            lastPosition = song.songPosition(heard)
            if case .paused(_, .speakerLost) = phase {
                effects.append(.log(.notice, "speaker lost: \(song.file) paused at \(Self.loggedSeconds(lastPosition)); it resumes when the speaker is back"))
            }
            publish(into: &effects)
        case let .outputReopened(ticket, unheard, rendered):
            // The audio the lost output (the speaker's, or one that stopped) held but never played
            // went with it: the song goes on from where the listener stopped hearing it, not from
            // where rendering was, and a note sounding there is struck again. Not for a song in a
            // section loop (a seek back over the loop's start would end it): it resumes where
            // rendering was.
            guard case let .playing(song) = phase, song.ticket == ticket, unheard >= 0.001, song.arrangement.loop == nil else { break }
            let target = song.arrangement.songSeconds(atArranged: max(0, rendered - unheard), in: song.written)
            effects.append(.log(.notice, "\(song.file) goes on from \(Self.loggedSeconds(target)), \(Int((unheard * 1000).rounded())) ms before where its lost output stopped: the speaker never played that audio"))
            effects.append(.seekRestriking(ticket: ticket, seconds: target))
        case let .outputStopped(ticket, reason, heard):
            outputStopped(ticket: ticket, reason: reason, heard: heard, into: &effects)
        case let .adjusted(ticket, arrangement, here, said):
            guard var song = playingSong, song.ticket == ticket else { break }
            song.arrangement = arrangement
            song.durationSeconds = song.written.durationSeconds
            switch phase {
            case .playing: phase = .playing(song)
            case let .paused(_, reason): phase = .paused(song, reason)
            default: break
            }
            lastPosition = arrangement.songSeconds(atArranged: 0, in: song.written)
            if let said { effects.append(.log(.info, "\(said) for \(song.file) at \(Self.loggedSeconds(here))")) }
            publish(into: &effects)
        case .shutdown:
            shuttingDown = true
            queue.removeAll()
            end(abandoningWith: { _ in .shuttingDown }, reportAsStopped: true, said: nil, into: &effects)
        case .shutDownComplete:
            phase = .shutDown
        }
        keepAlive(retrying: { if case .level = event { true } else if case .route = event { true } else { false } }(), into: &effects)
        return effects
    }

    // MARK: - Requests

    private mutating func play(_ item: PendingSong, queue wantsQueue: Bool, into effects: inout [Effect]) {
        if shuttingDown {
            effects.append(.refuse(.shuttingDown))
            return
        }
        if !ready, let waiting, !waiting.waitingCanSucceed {
            effects.append(.refuse(.cannotWait(file: item.file, reason: waiting.message)))
            return
        }
        if wantsQueue, currentTicket != nil {
            if let reason = queueRefusal(for: item.file, memory: item.memory) {
                effects.append(.refuse(.busy(file: item.file, reason: reason)))
                return
            }
            queue.append(item)
            effects.append(.log(.info, "queued \(item.file)\(onSpeaker) (\(queue.count) waiting)"))
            publish(into: &effects)
            return
        }
        queue.removeAll()
        end(abandoningWith: { .replaced(file: $0, by: item.file) }, reportAsStopped: true, said: .ended("replaced by \(item.file)"), into: &effects)
        phase = .starting(item)
        effects.append(.start(item, timeout: settings.playTimeout, awaited: true))
    }

    private mutating func pause(into effects: inout [Effect]) {
        switch phase {
        case let .playing(song):
            phase = .paused(song, .user)
            effects.append(.pauseSession(ticket: song.ticket))
        case let .paused(song, .speakerLost):
            phase = .paused(song.speakerLeft, .user)
            effects.append(.log(.info, "paused \(song.file)\(onSpeaker) as asked; it stays paused when the speaker is back"))
            publish(into: &effects)
        case .paused(_, .user):
            break
        case let .waiting(item), let .starting(item):
            effects.append(.refuse(.notStartedYet(operation: "pause", file: item.file)))
        case .idle, .stopped, .failed, .shutDown:
            effects.append(.refuse(.nothingPlaying(operation: "pause")))
        }
    }

    private mutating func resume(into effects: inout [Effect]) {
        switch phase {
        case .paused(var song, _):
            if ready {
                let reopen = song.outputMayBeGone
                song.outputMayBeGone = false
                phase = .playing(song)
                effects.append(.log(.info, "resumed \(song.file)\(onSpeaker) at \(Self.loggedSeconds(lastPosition))"))
                publish(into: &effects)
                effects.append(.resumeSession(ticket: song.ticket, reopen: reopen, after: "resumed"))
            } else {
                phase = .paused(song, .speakerLost)
                effects.append(.log(.info, "\(song.file) resumes when the speaker is back"))
                publish(into: &effects)
            }
        case .playing, .waiting, .starting:
            break
        case .idle, .stopped, .failed, .shutDown:
            effects.append(.refuse(.nothingPlaying(operation: "resume")))
        }
    }

    /// Brings the current song in line with the gate: pause or stop it when the speaker is not
    /// ready, resume it when it is back (only if the speaker's loss paused it, never a user's pause).
    private mutating func reconcileWithSpeaker(into effects: inout [Effect]) {
        switch phase {
        case let .playing(song) where !ready:
            switch settings.onSpeakerLost {
            case .pause:
                phase = .paused(song, .speakerLost)
                effects.append(.speakerGone(ticket: song.ticket, pause: true))
            case .stop:
                stopForSpeakerLoss(into: &effects)
            }
        case .paused(_, .user) where !ready && settings.onSpeakerLost == .stop:
            stopForSpeakerLoss(into: &effects)
        case let .paused(song, .user) where !ready && !song.outputMayBeGone:
            // Stays paused as the user asked; their `resume` opens the speaker's output again.
            phase = .paused(song.speakerLeft, .user)
            effects.append(.speakerGone(ticket: song.ticket, pause: false))
        case let .paused(song, .speakerLost) where ready:
            phase = .playing(song)
            effects.append(.log(.notice, "speaker back: \(song.file) resumed"))
            publish(into: &effects)
            effects.append(.resumeSession(ticket: song.ticket, reopen: true, after: "speaker back"))
        default:
            break
        }
    }

    /// The session paused a playing song whose device stopped taking audio. With the speaker
    /// gone, it is the speaker's loss; with it still there, the output is opened again, up to
    /// `outputReopens` times in a row; then the song fails with the device's reason. A song the
    /// user paused meanwhile keeps its pause: its resume opens the output again.
    private mutating func outputStopped(ticket: Int, reason: String, heard: Double, into effects: inout [Effect]) {
        guard case var .playing(song) = phase, song.ticket == ticket else { return }
        lastPosition = song.songPosition(heard)
        guard ready else {
            reconcileWithSpeaker(into: &effects)
            return
        }
        let again = song.lastOutputStop.map { heard - $0 < Self.steadyOutputSeconds } ?? false
        song.outputStops = again ? song.outputStops + 1 : 1
        song.lastOutputStop = heard
        if song.outputStops <= Self.outputReopens {
            phase = .playing(song)
            effects.append(.log(.warning, "\(song.file)\(onSpeaker): its output stopped taking audio at \(Self.loggedSeconds(lastPosition)) with the speaker still there; opening it again (\(song.outputStops) of \(Self.outputReopens))"))
            effects.append(.restartOutput(ticket: ticket))
            return
        }
        // The session still holds the song: it is ended before the next song starts.
        ending[ticket] = Ending(song: song, said: nil, reportAsStopped: false)
        effects.append(.endSession(ticket: ticket))
        fail(song, reason: "\(reason) (opened again \(Self.outputReopens) times; it stopped each time)", into: &effects)
    }

    /// The song failed where it was last heard (`lastPosition`). The status keeps saying why until
    /// the next song, so `status` and `play --wait` report a dead device instead of an innocent
    /// "idle"; the queue goes on.
    private mutating func fail(_ song: CurrentSong, reason: String, into effects: inout [Effect]) {
        effects.append(.log(.error, "playback of \(song.file)\(onSpeaker) failed: \(reason)"))
        phase = .failed(file: song.file, reason: reason, position: lastPosition, duration: song.durationSeconds)
        publish(into: &effects)
        startNextQueued(into: &effects)
    }

    /// `on_speaker_lost = stop`: the song ends and the queue is emptied.
    private mutating func stopForSpeakerLoss(into effects: inout [Effect]) {
        queue.removeAll()
        end(abandoningWith: { .stoppedBeforeStart(file: $0) }, reportAsStopped: true, said: .speakerLost, into: &effects)
    }

    /// Ends the current song, or abandons the one waiting to start (its request then hears
    /// `reason(file)`). A started song's session is stopped by the shell, which then reports
    /// `sessionEnded`; until then nothing takes the song's place unless a request does.
    private mutating func end(abandoningWith reason: (String) -> PlaybackServiceError, reportAsStopped: Bool,
                              said: Said?, into effects: inout [Effect]) {
        switch phase {
        case .idle, .stopped, .failed, .shutDown:
            return
        case let .waiting(item), let .starting(item):
            abandoned[item.ticket] = reason(item.file)
            let cancel: Effect = if case .waiting = phase { .cancelWait(ticket: item.ticket) } else { .cancelStart(ticket: item.ticket) }
            phase = .idle
            effects.append(cancel)
            if case let .ended(words)? = said { effects.append(.log(.info, "\(item.file)\(onSpeaker) \(words) before it started")) }
            if reportAsStopped { publish(into: &effects) }
        case let .playing(song), let .paused(song, _):
            phase = .idle
            ending[song.ticket] = Ending(song: song, said: said, reportAsStopped: reportAsStopped)
            effects.append(.endSession(ticket: song.ticket))
        }
    }

    /// Starts the next queued song, if nothing else is current; it waits for the speaker without
    /// a timeout (its client has had its answer).
    private mutating func startNextQueued(into effects: inout [Effect]) {
        guard currentTicket == nil, !shuttingDown, let next = queue.popFirst() else { return }
        phase = .starting(next)
        effects.append(.start(next, timeout: nil, awaited: false))
    }

    /// The keep-alive plays exactly while it is wanted: `keep_alive` on, the speaker ready, no
    /// song waiting, starting, playing or paused (a paused song's own stream carries it). Told
    /// when that changes, and again (`retrying`) when the speaker's readiness or route moves
    /// while it is wanted: an output that could not open is tried again then. Its stop goes
    /// before a song's start, so the two never hold the speaker at once.
    private mutating func keepAlive(retrying: Bool, into effects: inout [Effect]) {
        guard settings.keepAlive else { return }
        let idle = switch phase {
        case .idle, .stopped, .failed: true
        case .waiting, .starting, .playing, .paused, .shutDown: false
        }
        let wanted = idle && ready && !shuttingDown
        guard wanted != keepAlivePlaying || (wanted && retrying) else { return }
        keepAlivePlaying = wanted
        if let start = effects.firstIndex(where: { if case .start = $0 { true } else { false } }) {
            effects.insert(.keepAlive(wanted), at: start)
        } else {
            effects.append(.keepAlive(wanted))
        }
    }

    private func publish(into effects: inout [Effect]) {
        effects.append(.publish(current))
    }

    /// " on JBL Flip 5 (11:22:…)" for a log line, or nothing when the speaker is not known here.
    var onSpeaker: String { speaker.map { " on \($0.name) (\($0.address))" } ?? "" }

    /// A position for a log line, to a tenth of a second: "2.9 s".
    static func loggedSeconds(_ seconds: Double) -> String {
        let tenths = Int((max(0, seconds) * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
