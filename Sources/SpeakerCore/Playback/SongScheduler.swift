import MIDI
/// Our own sequencer: it renders audio up to each event's frame, sends the event, and goes on
/// (FluidSynth's `fluid_player` renders some valid files as silence, and pads every song with two
/// seconds). FluidSynth takes an event up at its next 64-frame block (`blockFrames`), so a note
/// sounds within one block of its time; a section loop's passes are laid on that grid so each
/// pass sounds, to the sample, as the first.
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

    /// FluidSynth renders in blocks of this many frames (`FLUID_BUFSIZE`): an event sent between
    /// two of its blocks sounds from the next block on. So a note takes effect on that grid,
    /// within 1.45 ms at 44.1 kHz, as in FluidSynth itself; a fresh synthesiser starts the grid on
    /// the frame a song or a live control starts, so what follows a seek is, to the sample, what
    /// a render starting there writes.
    static let blockFrames = 64

    /// One pass of a section loop after the way in: its first event, where it begins on the
    /// arranged timeline, and the frame it is laid at (on the block grid).
    private struct Pass {
        let index: Int
        let seconds: Double
        var base = 0
    }

    /// The song's events, shared with the song (no copy: a long song's events are its memory).
    /// Their frames are computed as they come up (`frame(ofEvent:)`).
    private let events: MIDIEventList
    private let rate: Double
    private(set) var endFrame: Int
    let maximumTailFrames: Int
    private var nextEvent = 0
    private var phase = Phase.song
    /// Frames rendered so far, the tail included.
    private(set) var position = 0
    /// A section loop's passes after the way in. Each is laid on the block grid and lasts a whole
    /// number of blocks (`passFrames`), so every pass's notes fall on the same samples of it: a
    /// pass equals the first to the sample, at the cost of at most 63 frames a pass (the section
    /// rounded up to the block). Empty without a loop.
    private var passes: [Pass] = []
    /// The length of one pass on the grid: the section's frames rounded up to whole blocks.
    private var passFrames = 0
    /// A live section loop: after its one pass the scheduler goes back to it, on the very next
    /// frame, for as long as the song is not replaced.
    private let repeats: Bool
    /// The pass the events being sent belong to; -1 for the way in.
    private var currentPass = -1
    /// Frames the loop has gone back by so far: the timeline's frame is `position - wrapped`.
    private var wrapped = 0
    /// The frame the last event sent was given: a later event never plays before it (see
    /// `frame(ofEvent:)`). Going back for a loop restores the value it had before the pass.
    private var lastEventFrame = 0
    /// `lastEventFrame` as it was just before the first pass begins: the way in's last event.
    private var loopLastEventFrame = 0

    /// Where the song is on its own (arranged) timeline: with a live loop, the place in the pass.
    var timelineFrame: Int { position - wrapped }

    /// A song as arranged, with the seams of its section loop (`ArrangedSong.seams`); with
    /// `ArrangedSong.loopStart` its pass repeats until the song is replaced.
    /// `blockPhase`: frames the synthesiser has rendered since its last block boundary (0 for a
    /// fresh one), so the passes are laid on its grid.
    init(song: ArrangedSong, sampleRate: Int, blockPhase: Int = 0) {
        self.init(song: song.song, sampleRate: sampleRate, repeats: song.loopStart != nil)
        let seams = song.seams.filter { $0.eventIndex <= events.count && $0.seconds.isFinite && $0.seconds >= 0 }
        guard let first = seams.first, zip(seams, seams.dropFirst()).allSatisfy({ $0.eventIndex <= $1.eventIndex && $0.seconds < $1.seconds })
        else { return }
        // Every pass is as long as the first: the next seam, or the song's end for the last one.
        let passSeconds = (seams.count > 1 ? seams[1].seconds : song.song.durationSeconds) - first.seconds
        let raw = Self.frame(at: passSeconds, rate: rate)
        // A pass of at least one frame, or going back would never move on.
        guard raw > 0 else { return }
        passes = seams.map { Pass(index: $0.eventIndex, seconds: $0.seconds) }
        passFrames = (raw + Self.blockFrames - 1) / Self.blockFrames * Self.blockFrames
        loopLastEventFrame = Self.lastFrame(of: events, before: first.eventIndex, rate: rate)
        align(toBlockPhase: blockPhase)
    }

    init(song: MIDISong, sampleRate: Int) {
        self.init(song: song, sampleRate: sampleRate, repeats: false)
    }

    private init(song: MIDISong, sampleRate: Int, repeats: Bool) {
        let rate = Double(sampleRate)
        self.events = song.events
        self.rate = rate
        self.repeats = repeats
        // The last event's frame: no event plays before an earlier one's (see `frame(ofEvent:)`).
        let lastFrame = Self.lastFrame(of: song.events, before: song.events.count, rate: rate)
        let durationFrames = Self.frame(at: song.durationSeconds, rate: rate)
        self.endFrame = max(durationFrames, lastFrame)
        self.maximumTailFrames = Int(ReleaseTail.maximumSeconds * rate)
    }

    /// Lays the passes on the grid of a synthesiser `phase` frames into its block (before the song
    /// renders a frame on it): the first pass on the first block boundary at or after its place,
    /// each next one a whole pass later. No allocation: the passes are laid again in place.
    mutating func align(toBlockPhase phase: Int) {
        guard !passes.isEmpty, position == 0 else { return }
        let block = Self.blockFrames
        let boundary = (block - phase % block) % block  // the first block boundary, in this song's frames
        let place = max(Self.frame(at: passes[0].seconds, rate: rate), loopLastEventFrame)
        let first = place + ((boundary - place) % block + block) % block
        for index in passes.indices { passes[index].base = first + index * passFrames }
        endFrame = first + passes.count * passFrames
    }

    /// The arranged timeline's seconds at `frame` of this scheduler's timeline, at most its end:
    /// within a pass, its place in the pass (the grid's rounding of the passes is not the song's time).
    func timelineSeconds(atFrame frame: Int) -> Double {
        let frame = min(frame, endFrame)
        guard let pass = passes.last(where: { $0.base <= frame }) else { return Double(frame) / rate }
        return pass.seconds + Double(min(frame - pass.base, passFrames)) / rate
    }

    /// The latest frame of the events before `end`: where an event after them plays at the
    /// earliest (`frame(ofEvent:)` keeps the order monotonic).
    private static func lastFrame(of events: MIDIEventList, before end: Int, rate: Double) -> Int {
        (0..<end).reduce(0) { max($0, frame(at: events.seconds(at: $1), rate: rate)) }
    }

    /// Follows the pass `nextEvent` belongs to.
    private mutating func followPasses() {
        while currentPass + 1 < passes.count, nextEvent >= passes[currentPass + 1].index { currentPass += 1 }
    }

    /// The frame event `index` (of the pass under way) plays on: within a pass, its place in the
    /// pass from the pass's base, so every pass lays its events alike. The reader sorts events;
    /// the order is kept monotonic anyway, so a hand-built song with a stray earlier time plays it
    /// at once instead of never.
    private func frame(ofEvent index: Int) -> Int {
        let seconds = events.seconds(at: index)
        guard currentPass >= 0 else { return max(Self.frame(at: seconds, rate: rate), lastEventFrame) }
        let pass = passes[currentPass]
        return max(pass.base + min(Self.frame(at: seconds - pass.seconds, rate: rate), passFrames), lastEventFrame)
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
                followPasses()
                while nextEvent < events.count {
                    let frame = frame(ofEvent: nextEvent)
                    guard frame <= timeline else { break }
                    lastEventFrame = frame
                    synthesizer.send(events.message(at: nextEvent))
                    nextEvent += 1
                    followPasses()
                }
                if timeline >= endFrame {
                    if repeats, let pass = passes.first {
                        // The pass's own releases were sent at its end; its chase and first
                        // events follow on this same frame: no gap, no drift, and the same samples
                        // every pass, as the pass is a whole number of blocks.
                        wrapped += passFrames
                        nextEvent = pass.index
                        currentPass = 0
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
