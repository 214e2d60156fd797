/// A format 0 or 1 song assembled while its file is parsed, event by event, straight into the
/// packed form (`MIDIEventList`): what `MIDIFileReader.read` does instead of building the whole
/// tick-level `MIDIFile` first.
///
/// Why: the tick-level model takes about 40 bytes an event and, for a 15 MB file of notes, was
/// most of a reading's peak memory (the song itself is 6 bytes an event). Here each event is
/// kept only as what the song needs of it: its packed form, a tempo or meter change, the channel
/// it uses. `MIDISong(_:limits:)` packs a parsed file's events through the same type, so both
/// ways give the same song, to the bit (`PackedEventsTests` compares them over the corpus).
///
/// Used from one parser at a time, on one thread (the reader is synchronous).
final class PackedSongReading {
    private var builder = MIDIEventList.TickBuilder()
    private var timelines: [ContiguousArray<UInt64>]
    private var trackChannels: [Set<UInt8>]
    private var tempoChanges: [(tick: Int, microsecondsPerQuarter: Int)] = []
    private var meterChanges: [(tick: Int, meter: MIDIMeter)] = []
    /// Set once an event could not be packed with its tick: the song is then read the long way.
    private var unpackable = false

    init(trackCount: Int) {
        timelines = Array(repeating: [], count: trackCount)
        trackChannels = Array(repeating: [], count: trackCount)
    }

    /// Takes one event of track `track` (0-based), in file order.
    func take(_ event: MIDITrackEvent, track: Int) {
        if let message = MIDISong.playable(event.kind) {
            if let channel = message.channel, case .channel = event.kind { trackChannels[track].insert(channel) }
            guard !unpackable, let value = builder.value(tick: event.tick, message: message) else {
                unpackable = true
                return
            }
            timelines[track].append(value)
        } else if let tempo = MIDITempoMap.microsecondsPerQuarter(of: event.kind) {
            tempoChanges.append((event.tick, tempo))
        } else if let meter = MIDIBarMap.meter(of: event.kind) {
            meterChanges.append((event.tick, meter))
        }
    }

    /// The song, once every track is parsed (`tracks` as the parser returned them, without their
    /// events); nil when an event could not be packed. Throws when the song is longer than
    /// `limits` allow, as `MIDISong(_:limits:)` does.
    func song(division: MIDITimeDivision, tracks: [MIDITrack], warnings: [MIDIFileWarning],
              limits: MIDIReadLimits) throws(MIDIFileError) -> MIDISong? {
        let map = MIDITempoMap(division: division, changes: tempoChanges)
        let endTick = tracks.map(\.endTick).max() ?? 0
        let duration = tracks.reduce(0.0) { max($0, 0.0 + map.seconds(atTick: $1.endTick)) }
        try MIDISong.checkDuration(duration, limits: limits)
        guard !unpackable else { return nil }
        var bars: MIDIBarMap?
        if case .ticksPerQuarterNote(let ppq) = division, ppq > 0 {
            bars = MIDIBarMap(ticksPerQuarter: Int(ppq), tempo: map, meterChanges: meterChanges, endTick: endTick)
        }
        return MIDISong(
            events: builder.list(merging: timelines, map: map),
            durationSeconds: duration,
            title: tracks.lazy.compactMap(\.name).first,
            trackNames: tracks.map(\.name),
            warnings: warnings,
            bars: bars,
            trackChannels: trackChannels)
    }
}
