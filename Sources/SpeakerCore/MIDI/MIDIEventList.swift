/// A song's events, packed: 6 bytes an event for a song read from a file, against the 16 of a
/// `MIDITimedEvent` and the 3–4 the file itself spends on a note.
///
/// Why packed: a parsed song is what a queue of songs holds, so its size is what bounds
/// speakerd's memory in bytes (at most twice its file, and a file's densest event, a
/// note under running status, takes 3 bytes). A channel message needs a kind, a channel and two
/// 7-bit data bytes; its time needs no `Double` of its own when the song keeps its ticks and its
/// tempo map, because the reader's seconds are a function of the tick
/// (`MIDITempoMap.seconds(atTick:)`), computed again here the same way, to the same bits.
///
/// Three clocks:
/// - **ticks** (what the reader makes for formats 0 and 1, PPQ or SMPTE, with every tick under
///   2^27): each event keeps its tick in 27 bits and the list keeps the song's tempo map;
/// - **arranged** (a song the composer's controls made of a song on the ticks clock: `--from`,
///   `--loop`, `--tempo`, `--transpose`, `--mute`…): a view of the written song's own events,
///   sharing their storage, with a few runs saying which of them play when, and the events the
///   arrangement adds (count-in, chases, releases) beside them (`MIDIEventList+Arranged.swift`);
/// - **seconds** (a song built from `MIDITimedEvent`s: a test, a format 2 file, whose tracks have
///   tempo maps of their own, a file past those bounds, or an arrangement of such a song): each
///   event's seconds in a side array (14 bytes an event), so any `Double` comes back exactly as
///   given.
///
/// System-exclusive messages live in a side table; the packed event holds their index.
/// Reading an element never allocates (the scheduler does it on the real-time thread).
public struct MIDIEventList: RandomAccessCollection, Sendable, ExpressibleByArrayLiteral {
    public typealias Index = Int
    public typealias Element = MIDITimedEvent

    /// How an event's seconds are found.
    enum Clock: Sendable, Equatable {
        /// Seconds are `map.seconds(atTick:)` of the event's tick.
        case ticks(MIDITempoMap)
        /// Seconds are `seconds[index]`.
        case seconds([Double])
        /// `storage` and `sysEx` are the written song's (ticks layout); the view says which of
        /// its events play when.
        case arranged(ArrangedView)
    }

    /// Three 16-bit words per event, a 48-bit value low word first (see `Layout`).
    private(set) var storage: ContiguousArray<UInt16>
    private(set) var sysEx: [[UInt8]]
    private(set) var clock: Clock

    private enum Kind: UInt64 {
        case noteOff, noteOn, polyPressure, controlChange, programChange, channelPressure, pitchBend, systemExclusive
    }

    /// Where the fields sit in an event's 48 bits, for each clock.
    ///
    /// Ticks clock (values as a file can hold them): tick 27 bits, kind 3, channel 4, and two
    /// 7-bit data bytes (a pitch bend's 14 bits, low 7 first); a system-exclusive message keeps
    /// its table index in the 18 bits after the kind.
    /// Seconds clock (any value a hand-built message holds): kind 3, channel 8, two 8-bit data
    /// bytes (a pitch bend's 16 bits, low byte first); a system-exclusive index in 45 bits.
    struct Layout {
        var tickBits: Int
        var channelBits: Int
        var dataBits: Int
        static let ticks = Layout(tickBits: 27, channelBits: 4, dataBits: 7)
        static let seconds = Layout(tickBits: 0, channelBits: 8, dataBits: 8)
        var kindShift: Int { tickBits }
        var channelShift: Int { tickBits + 3 }
        var firstShift: Int { channelShift + channelBits }
        var secondShift: Int { firstShift + dataBits }
        var sysExIndexLimit: Int { 1 << (48 - channelShift) }

        /// The 48-bit value of `message` at `tick`, or nil when a field does not fit.
        func pack(_ message: MIDIMessage, tick: Int, sysExIndex: Int) -> UInt64? {
            guard tick >= 0, tick < 1 << tickBits || tickBits == 0 else { return nil }
            func fields(_ kind: Kind, _ channel: UInt8, _ first: Int, _ second: Int = 0) -> UInt64? {
                guard Int(channel) < 1 << channelBits, first < 1 << dataBits, second < 1 << dataBits else { return nil }
                return UInt64(tick) | kind.rawValue << kindShift | UInt64(channel) << channelShift
                    | UInt64(first) << firstShift | UInt64(second) << secondShift
            }
            switch message {
            case let .noteOff(channel, key, velocity): return fields(.noteOff, channel, Int(key), Int(velocity))
            case let .noteOn(channel, key, velocity): return fields(.noteOn, channel, Int(key), Int(velocity))
            case let .polyPressure(channel, key, pressure): return fields(.polyPressure, channel, Int(key), Int(pressure))
            case let .controlChange(channel, controller, value): return fields(.controlChange, channel, Int(controller), Int(value))
            case let .programChange(channel, program): return fields(.programChange, channel, Int(program))
            case let .channelPressure(channel, pressure): return fields(.channelPressure, channel, Int(pressure))
            case let .pitchBend(channel, value):
                let low = Int(value) & ((1 << dataBits) - 1)
                return fields(.pitchBend, channel, low, Int(value) >> dataBits)
            case .systemExclusive:
                guard sysExIndex < sysExIndexLimit else { return nil }
                return UInt64(tick) | Kind.systemExclusive.rawValue << kindShift | UInt64(sysExIndex) << channelShift
            }
        }

        func tick(of value: UInt64) -> Int { Int(value & ((1 << UInt64(tickBits)) - 1)) }

        func message(of value: UInt64, sysEx: [[UInt8]]) -> MIDIMessage {
            let dataMask: UInt64 = (1 << UInt64(dataBits)) - 1
            let channel = UInt8(truncatingIfNeeded: (value >> UInt64(channelShift)) & ((1 << UInt64(channelBits)) - 1))
            let first = UInt8(truncatingIfNeeded: (value >> UInt64(firstShift)) & dataMask)
            let second = UInt8(truncatingIfNeeded: (value >> UInt64(secondShift)) & dataMask)
            switch Kind(rawValue: (value >> UInt64(kindShift)) & 0b111) {
            case .noteOff: return .noteOff(channel: channel, key: first, velocity: second)
            case .noteOn: return .noteOn(channel: channel, key: first, velocity: second)
            case .polyPressure: return .polyPressure(channel: channel, key: first, pressure: second)
            case .controlChange: return .controlChange(channel: channel, controller: first, value: second)
            case .programChange: return .programChange(channel: channel, program: first)
            case .channelPressure: return .channelPressure(channel: channel, pressure: first)
            case .pitchBend: return .pitchBend(channel: channel, value: UInt16(first) | UInt16(second) << UInt16(dataBits))
            case .systemExclusive, nil: return .systemExclusive(sysEx[Int(value >> UInt64(channelShift))])
            }
        }
    }

    private var layout: Layout {
        if case .seconds = clock { .seconds } else { .ticks }
    }

    public init() {
        storage = []
        sysEx = []
        clock = .seconds([])
    }

    /// A list holding `events` as given (the seconds clock): every time comes back to the bit.
    public init(_ events: some Sequence<MIDITimedEvent>) {
        var storage = ContiguousArray<UInt16>()
        var seconds: [Double] = []
        var sysEx: [[UInt8]] = []
        storage.reserveCapacity(events.underestimatedCount * 3)
        seconds.reserveCapacity(events.underestimatedCount)
        for event in events {
            // Every field of a hand-built message fits the seconds layout (8 bits a byte, 45 of
            // table index), so this never fails.
            let value = Layout.seconds.pack(event.message, tick: 0, sysExIndex: sysEx.count) ?? 0
            if case .systemExclusive(let bytes) = event.message { sysEx.append(bytes) }
            Self.append(value, to: &storage)
            seconds.append(event.seconds)
        }
        self.storage = storage
        self.sysEx = sysEx
        self.clock = .seconds(seconds)
    }

    public init(arrayLiteral elements: MIDITimedEvent...) {
        self.init(elements)
    }

    /// The reader's builder: events as (tick, message), packed in 48 bits (in a `UInt64` while
    /// the tracks are merged), and the list made of them once the song's tempo map is known.
    struct TickBuilder {
        private(set) var sysEx: [[UInt8]] = []

        /// The packed event, or nil when it cannot be packed with its tick (a tick from 2^27 on,
        /// more system-exclusive messages than 18 bits index): the caller then uses the seconds
        /// clock for the whole song.
        mutating func value(tick: Int, message: MIDIMessage) -> UInt64? {
            guard let value = Layout.ticks.pack(message, tick: tick, sysExIndex: sysEx.count) else { return nil }
            if case .systemExclusive(let bytes) = message { sysEx.append(bytes) }
            return value
        }

        static func tick(of value: UInt64) -> Int { Layout.ticks.tick(of: value) }

        /// Every track's events (each in time order) in one timeline: merged by the seconds
        /// `map` gives their ticks, ties in track order (as `MIDITimelineMerge.merge` does by
        /// seconds), in storage exactly as large as it needs.
        func list(merging tracks: [ContiguousArray<UInt64>], map: MIDITempoMap) -> MIDIEventList {
            // The tempo map keeps ticks in order; where two ticks fall at the same seconds (a
            // Double far from 0 cannot tell neighbouring ticks of a very fast tempo apart) the
            // earlier track wins the tie, as in a merge by seconds.
            let merged = tracks.count == 1 ? tracks[0] : MIDITimelineMerge.merge(tracks) { right, left in
                Self.tick(of: right) < Self.tick(of: left)
                    && map.seconds(atTick: Self.tick(of: right)) < map.seconds(atTick: Self.tick(of: left))
            }
            var storage = ContiguousArray<UInt16>()
            storage.reserveCapacity(merged.count * 3)
            for value in merged { MIDIEventList.append(value, to: &storage) }
            return MIDIEventList(storage: storage, sysEx: sysEx, clock: .ticks(map))
        }
    }

    init(storage: ContiguousArray<UInt16>, sysEx: [[UInt8]], clock: Clock) {
        self.storage = storage
        self.sysEx = sysEx
        self.clock = clock
    }

    static func append(_ value: UInt64, to storage: inout ContiguousArray<UInt16>) {
        storage.append(UInt16(truncatingIfNeeded: value))
        storage.append(UInt16(truncatingIfNeeded: value >> 16))
        storage.append(UInt16(truncatingIfNeeded: value >> 32))
    }

    private func value(at index: Int) -> UInt64 {
        Self.value(at: index, in: storage)
    }

    static func value(at index: Int, in storage: ContiguousArray<UInt16>) -> UInt64 {
        let base = index * 3
        return UInt64(storage[base]) | UInt64(storage[base + 1]) << 16 | UInt64(storage[base + 2]) << 32
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int {
        if case .arranged(let view) = clock { return view.count }
        return storage.count / 3
    }

    public subscript(position: Int) -> MIDITimedEvent {
        MIDITimedEvent(seconds: seconds(at: position), message: message(at: position))
    }

    /// The seconds of event `index`, without decoding its message.
    public func seconds(at index: Int) -> Double {
        switch clock {
        case .ticks(let map): map.seconds(atTick: Layout.ticks.tick(of: value(at: index)))
        case .seconds(let seconds): seconds[index]
        case .arranged(let view): view.seconds(at: index, written: storage)
        }
    }

    /// The message of event `index`, without computing its time.
    public func message(at index: Int) -> MIDIMessage {
        if case .arranged(let view) = clock { return view.message(at: index, written: storage, sysEx: sysEx) }
        return layout.message(of: value(at: index), sysEx: sysEx)
    }

    /// The bytes this list holds on the heap, give or take malloc's rounding (what
    /// `MIDISong.memoryFootprint` counts for its events).
    var memoryFootprint: Int {
        let arrayHeader = 32
        var bytes = arrayHeader + storage.capacity * MemoryLayout<UInt16>.stride
        if !sysEx.isEmpty { bytes += arrayHeader + sysEx.capacity * MemoryLayout<[UInt8]>.stride }
        for message in sysEx { bytes += arrayHeader + message.capacity }
        switch clock {
        case .ticks(let map): bytes += map.memoryFootprint
        case .seconds(let seconds): bytes += arrayHeader + seconds.capacity * MemoryLayout<Double>.stride
        case .arranged(let view): bytes += view.map.memoryFootprint + view.memoryFootprint
        }
        return bytes
    }

    /// The bytes this list holds beyond what `other` holds already: all of them, but for an
    /// arranged view of `other`, which shares its events (and counts only what it adds).
    func memoryFootprint(besides other: MIDIEventList) -> Int {
        guard case .arranged(let view) = clock, case .ticks = other.clock, shares(other) else { return memoryFootprint }
        return view.memoryFootprint
    }

    /// Whether this list's events are `other`'s own storage, not a copy of it.
    private func shares(_ other: MIDIEventList) -> Bool {
        storage.withUnsafeBufferPointer { mine in
            other.storage.withUnsafeBufferPointer { theirs in mine.baseAddress == theirs.baseAddress && mine.count == theirs.count }
        }
    }
}

extension MIDIEventList: Equatable {
    /// Equal when they hold the same events at the same seconds, whichever clock each keeps.
    public static func == (lhs: MIDIEventList, rhs: MIDIEventList) -> Bool {
        if lhs.storage == rhs.storage, lhs.sysEx == rhs.sysEx, lhs.clock == rhs.clock { return true }
        return lhs.elementsEqual(rhs)
    }
}

extension MIDIEventList: CustomStringConvertible {
    public var description: String { Array(self).description }
}
