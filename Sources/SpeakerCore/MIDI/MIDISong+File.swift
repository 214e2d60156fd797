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
        // Formats 0 and 1 packed with their ticks (6 bytes an event), as `MIDIFileReader.read`
        // packs them while it parses; a song the packing cannot hold keeps its seconds.
        if file.format != .sequentialTracks {
            let reading = PackedSongReading(trackCount: file.tracks.count)
            for (index, track) in file.tracks.enumerated() {
                for event in track.events { reading.take(event, track: index) }
            }
            if let song = try reading.song(division: file.division, tracks: file.tracks, warnings: file.warnings, limits: limits) {
                self = song
                return
            }
        }
        let shared = file.format == .sequentialTracks ? nil : MIDITempoMap(file: file, tracks: file.tracks.indices)
        var duration = 0.0
        var trackStart = 0.0
        for (trackIndex, track) in file.tracks.enumerated() {
            let map = shared ?? MIDITempoMap(file: file, tracks: [trackIndex])
            let end = trackStart + map.seconds(atTick: track.endTick)
            duration = max(duration, end)
            if shared == nil { trackStart = end }
        }
        try Self.checkDuration(duration, limits: limits)
        self.init(
            events: Self.secondsEvents(of: file, shared: shared),
            durationSeconds: duration,
            title: file.tracks.lazy.compactMap(\.name).first,
            trackNames: file.tracks.map(\.name),
            warnings: file.warnings,
            bars: MIDIBarMap(file: file, tempo: shared),
            trackChannels: file.tracks.map(Self.channels))
    }

    /// Any file, each event with its seconds: format 2's tracks follow one another, each under
    /// its own tempo map (`shared` is nil then); formats 0 and 1 share `shared`.
    private static func secondsEvents(of file: MIDIFile, shared: MIDITempoMap?) -> MIDIEventList {
        var timelines: [[MIDITimedEvent]] = []
        var trackStart = 0.0
        for (trackIndex, track) in file.tracks.enumerated() {
            let map = shared ?? MIDITempoMap(file: file, tracks: [trackIndex])
            var timeline: [MIDITimedEvent] = []
            timeline.reserveCapacity(track.events.count)
            for event in track.events {
                guard let message = Self.playable(event.kind) else { continue }
                timeline.append(MIDITimedEvent(seconds: trackStart + map.seconds(atTick: event.tick), message: message))
            }
            timelines.append(timeline)
            if shared == nil { trackStart += map.seconds(atTick: track.endTick) }
        }
        return MIDIEventList(MIDITimelineMerge.merge(timelines))
    }

    /// Throws the limit's error when a song of `duration` seconds is longer than `limits` allow.
    static func checkDuration(_ duration: Double, limits: MIDIReadLimits) throws(MIDIFileError) {
        guard duration <= limits.maxDurationSeconds else {
            throw MIDIFileError(.limitExceeded(.durationSeconds, value: Self.wholeSeconds(duration),
                                               limit: Self.wholeSeconds(limits.maxDurationSeconds)))
        }
    }

    /// The channels a track's channel messages use.
    private static func channels(of track: MIDITrack) -> Set<UInt8> {
        var channels: Set<UInt8> = []
        for event in track.events {
            if case .channel(let message) = event.kind, let channel = message.channel { channels.insert(channel) }
        }
        return channels
    }

    /// Seconds for a message, safe for any Double a caller may have put in the limits.
    private static func wholeSeconds(_ seconds: Double) -> Int {
        seconds.isNaN ? 0 : Int(min(max(seconds, 0), 1e15))
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
