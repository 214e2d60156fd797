import MIDI
/// Our own sample-accurate sequencer: it renders audio exactly up to each event's frame, sends the
/// event, and goes on, so a note sounds on the frame its time says (FluidSynth's `fluid_player`
/// only dispatches on 64-frame block boundaries and renders some valid files as silence).
///
/// After the song's last event it releases every held note and renders a short *release tail*:
/// until the output falls below `ReleaseTail.silenceThreshold` for one `ReleaseTail.chunkFrames`
/// chunk, and never longer than `ReleaseTail.maximumSeconds`. So a song lasts its duration plus at
/// most one second, never FluidSynth's fixed two seconds of silence.
///
/// `render` never allocates: it is called from real-time audio callbacks.
struct SongScheduler {
    /// How the end of a song is rendered; see the type's documentation.
    enum ReleaseTail {
        /// Upper bound of the tail after the song's duration.
        static let maximumSeconds = 1.0
        /// Peak level (full scale = 1) under which the tail counts as silent: -60 dBFS.
        static let silenceThreshold: Float = 0.001
        /// The tail is measured and ended in chunks of this many frames (about 6 ms at 44.1 kHz).
        static let chunkFrames = 256
    }

    private enum Phase {
        case song
        case tail(renderedFrames: Int)
        case finished
    }

    /// The song's events, shared with the song (no copy: a long song's events are its memory).
    /// Their frames are computed as they come up (`frame(ofEvent:)`).
    private let events: MIDIEventList
    private let rate: Double
    let endFrame: Int
    let maximumTailFrames: Int
    private var nextEvent = 0
    private var phase = Phase.song
    /// Frames rendered so far, the tail included.
    private(set) var position = 0
    /// A live section loop: at `endFrame` the scheduler goes back to the pass that begins with
    /// event `index` at frame `frame`, on the very next frame, for as long as it is set.
    private var loop: (index: Int, frame: Int)?
    /// Frames the loop has gone back by so far: the timeline's frame is `position - wrapped`.
    private var wrapped = 0
    /// The frame the last event sent was given: a later event never plays before it (see
    /// `frame(ofEvent:)`). Going back for a loop restores the value it had before the pass.
    private var lastEventFrame = 0
    /// `lastEventFrame` as it was just before the loop's pass begins.
    private var loopLastEventFrame = 0

    /// Where the song is on its own (arranged) timeline: with a live loop, the place in the pass.
    var timelineFrame: Int { position - wrapped }

    /// A song whose section loop repeats until the song is replaced (`SongArrangement.arrangeLive`).
    init(song: ArrangedSong, sampleRate: Int) {
        self.init(song: song.song, sampleRate: sampleRate)
        if let start = song.loopStart, start.eventIndex <= events.count {
            let frame = Self.frame(at: start.seconds, rate: rate)
            // A pass of at least one frame, or going back would never move on.
            if frame < endFrame {
                loop = (start.eventIndex, frame)
                loopLastEventFrame = Self.lastFrame(of: events, before: start.eventIndex, rate: rate)
            }
        }
    }

    init(song: MIDISong, sampleRate: Int) {
        let rate = Double(sampleRate)
        self.events = song.events
        self.rate = rate
        // The last event's frame: no event plays before an earlier one's (see `frame(ofEvent:)`).
        let lastFrame = Self.lastFrame(of: song.events, before: song.events.count, rate: rate)
        let durationFrames = Self.frame(at: song.durationSeconds, rate: rate)
        self.endFrame = max(durationFrames, lastFrame)
        self.maximumTailFrames = Int(ReleaseTail.maximumSeconds * rate)
    }

    /// The latest frame of the events before `end`: where an event after them plays at the
    /// earliest (`frame(ofEvent:)` keeps the order monotonic).
    private static func lastFrame(of events: MIDIEventList, before end: Int, rate: Double) -> Int {
        (0..<end).reduce(0) { max($0, frame(at: events.seconds(at: $1), rate: rate)) }
    }

    /// The frame event `index` plays on. The reader sorts events; the order is kept monotonic
    /// anyway, so a hand-built song with a stray earlier time plays it at once instead of never.
    private func frame(ofEvent index: Int) -> Int {
        max(Self.frame(at: events.seconds(at: index), rate: rate), lastEventFrame)
    }

    /// Longest song we schedule: a day. Our reader's limits keep real files far below it; the
    /// cap only keeps a hand-built song with an absurd time from overflowing `Int`.
    static let maximumSeconds = 86_400.0

    /// The frame of a time in seconds: negative and non-finite times play at once.
    private static func frame(at seconds: Double, rate: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return Int((min(seconds, maximumSeconds) * rate).rounded())
    }

    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }

    /// Renders up to `frames` frames through `write`, dispatching events on their exact frames.
    ///
    /// `write(offset, count, measure)` must render `count` frames at frame `offset` of the caller's
    /// buffer and, when `measure` is true (only in the release tail), return the peak absolute
    /// level (0...1) of what it wrote. Returns the number of frames produced: fewer than asked
    /// only when the song (tail included) has ended.
    mutating func render(
        frames: Int, synthesizer: Synthesizer,
        write: (_ offset: Int, _ count: Int, _ measure: Bool) -> Float
    ) -> Int {
        var produced = 0
        while produced < frames {
            switch phase {
            case .finished:
                return produced
            case .song:
                let timeline = position - wrapped
                while nextEvent < events.count {
                    let frame = frame(ofEvent: nextEvent)
                    guard frame <= timeline else { break }
                    lastEventFrame = frame
                    synthesizer.send(events.message(at: nextEvent))
                    nextEvent += 1
                }
                if timeline >= endFrame {
                    if let loop {
                        // The pass's own releases were sent at its end; its chase and first
                        // events follow on this same frame: no gap, and no drift, as the pass is
                        // a whole number of frames.
                        wrapped += endFrame - loop.frame
                        nextEvent = loop.index
                        lastEventFrame = loopLastEventFrame
                        continue
                    }
                    synthesizer.releaseAllNotes()
                    phase = .tail(renderedFrames: 0)
                    continue
                }
                let boundary = nextEvent < events.count ? min(frame(ofEvent: nextEvent), endFrame) : endFrame
                let count = min(frames - produced, boundary - timeline)
                _ = write(produced, count, false)
                produced += count
                position += count
            case let .tail(renderedFrames):
                let count = min(frames - produced, ReleaseTail.chunkFrames, maximumTailFrames - renderedFrames)
                if count <= 0 {
                    phase = .finished
                    continue
                }
                let peak = write(produced, count, true)
                produced += count
                position += count
                let rendered = renderedFrames + count
                phase = peak < ReleaseTail.silenceThreshold || rendered >= maximumTailFrames
                    ? .finished : .tail(renderedFrames: rendered)
            }
        }
        return produced
    }
}
