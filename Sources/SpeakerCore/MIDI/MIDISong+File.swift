/// Builds the playable timeline from a parsed file: tempo maps applied, tracks merged or laid
/// end to end, only what a synthesiser acts on kept.
extension MIDISong {
    /// Formats 0 and 1 share one tempo map taken from every track (conventionally track 0 holds
    /// it, but tempo events elsewhere are honoured rather than dropped) and their tracks play
    /// together. Format 2 tracks are independent sequences: each has its own tempo map and starts
    /// when the previous one ends (at its End of Track).
    ///
    /// The SMPTE offset meta event (0x54) is not turned into leading silence: it says where the
    /// song sits on an external timecode, which a player without one ignores (as the corpus's
    /// `test-smpte-offset.mid` expects).
    public init(_ file: MIDIFile, limits: MIDIReadLimits = .default) throws(MIDIFileError) {
        var timed: [(seconds: Double, track: Int, index: Int, message: MIDIMessage)] = []
        var duration = 0.0
        var trackStart = 0.0
        let shared = file.format == .sequentialTracks ? nil : MIDITempoMap(file: file, tracks: file.tracks.indices)
        for (trackIndex, track) in file.tracks.enumerated() {
            let map = shared ?? MIDITempoMap(file: file, tracks: [trackIndex])
            for (eventIndex, event) in track.events.enumerated() {
                guard let message = Self.playable(event.kind) else { continue }
                timed.append((trackStart + map.seconds(atTick: event.tick), trackIndex, eventIndex, message))
            }
            let end = trackStart + map.seconds(atTick: track.endTick)
            duration = max(duration, end)
            if shared == nil { trackStart = end }
        }
        guard duration <= limits.maxDurationSeconds else {
            throw MIDIFileError(.limitExceeded(.durationSeconds, value: Int(min(duration, 1e15)),
                                               limit: Int(limits.maxDurationSeconds)))
        }
        timed.sort { ($0.seconds, $0.track, $0.index) < ($1.seconds, $1.track, $1.index) }
        self.init(
            events: timed.map { MIDITimedEvent(seconds: $0.seconds, message: $0.message) },
            durationSeconds: duration,
            title: file.tracks.lazy.compactMap(\.name).first,
            trackNames: file.tracks.map(\.name))
    }

    /// The message a synthesiser should receive for an event, if any. An F7 escape is passed on
    /// only when it carries a whole sysex (F0 … F7); other raw bytes have no place in a song.
    static func playable(_ kind: MIDITrackEvent.Kind) -> MIDIMessage? {
        switch kind {
        case .channel(let message):
            return message
        case .systemExclusive(let bytes):
            return .systemExclusive(bytes)
        case .escape(let bytes) where bytes.count >= 2 && bytes.first == 0xF0 && bytes.last == 0xF7:
            return .systemExclusive(Array(bytes.dropFirst().dropLast()))
        case .escape, .meta, .ignoredSystemMessage:
            return nil
        }
    }
}
