import MIDI

/// Where an arrangement lays its events, in the arranged order (`SongArrangement.laidOut`).
///
/// Two forms take them: a view of the written song's packed events (`MIDIEventList.ArrangedBuilder`,
/// what speakerd keeps), and a `Double` of seconds an event (`TimedArrangedEvents`, for a song
/// without ticks to share). One routine feeds both, so they cannot drift apart.
protocol ArrangedEventSink {
    /// Events laid so far: the index the next one takes.
    var count: Int { get }
    /// Written event `index`, played as `message` (moved by the transposition) at
    /// `(offset + its seconds - origin) / factor`.
    mutating func appendWritten(_ index: Int, message: MIDIMessage, offset: Double, origin: Double)
    /// An event the arrangement adds, at `seconds` of the arranged song; false when this form
    /// cannot hold it.
    mutating func appendAdded(_ message: MIDIMessage, seconds: Double) -> Bool
}

extension MIDIEventList.ArrangedBuilder: ArrangedEventSink {
    mutating func appendWritten(_ index: Int, message: MIDIMessage, offset: Double, origin: Double) {
        // The view moves the written message itself when it is read.
        appendWritten(index, offset: offset, origin: origin)
    }
}

/// The arranged events with their seconds, for a written song on the seconds clock.
struct TimedArrangedEvents: ArrangedEventSink {
    let written: MIDIEventList
    let factor: Double
    private(set) var events: [MIDITimedEvent] = []

    init(written: MIDIEventList, factor: Double) {
        self.written = written
        self.factor = factor
    }

    var count: Int { events.count }

    mutating func appendWritten(_ index: Int, message: MIDIMessage, offset: Double, origin: Double) {
        events.append(MIDITimedEvent(seconds: (offset + written.seconds(at: index) - origin) / factor, message: message))
    }

    mutating func appendAdded(_ message: MIDIMessage, seconds: Double) -> Bool {
        events.append(MIDITimedEvent(seconds: seconds, message: message))
        return true
    }
}
