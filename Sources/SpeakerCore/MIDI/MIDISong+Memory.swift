/// What a parsed song costs in memory, so that a queue of songs can be bounded in bytes and not
/// only in count.
extension MIDISong {
    /// The bytes this song holds on the heap, give or take malloc's rounding: the packed events
    /// with their clock and system-exclusive table, the names, the warnings and the bar map.
    ///
    /// An estimate from the types' layouts, not a measurement: it is what the queue's memory limit
    /// counts, and `bench-song-memory` checks it against the heap a parsed song really takes.
    public var memoryFootprint: Int {
        let arrayHeader = 32
        let stringBytes = { (text: String?) -> Int in
            guard let text else { return 0 }
            let count = text.utf8.count
            return count <= 15 ? 0 : count + arrayHeader  // short strings live inline
        }
        var bytes = events.memoryFootprint
        bytes += stringBytes(title)
        bytes += arrayHeader + trackNames.capacity * MemoryLayout<String?>.stride + trackNames.reduce(0) { $0 + stringBytes($1) }
        bytes += arrayHeader + warnings.capacity * MemoryLayout<MIDIFileWarning>.stride
            + warnings.reduce(0) { $0 + stringBytes($1.message) }
        return bytes
    }
}

extension MIDISong {
    /// The bytes this song holds beyond what `other` holds already: for an arrangement of
    /// `other` laid out as a view of its events, only what the arrangement adds (the events are
    /// `other`'s); for any other song, all of `memoryFootprint`. What a queued arranged song
    /// costs on top of the written song kept beside it.
    public func memoryFootprint(besides other: MIDISong) -> Int {
        memoryFootprint - events.memoryFootprint + events.memoryFootprint(besides: other.events)
    }
}
