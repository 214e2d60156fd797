/// An arranged song's events as a view of the written song's: the arranged list shares the
/// written list's packed storage and keeps only how to read it.
///
/// Why a view: a song queued with the composer's controls (`play --from --loop --tempo
/// --transpose --count-in…`) is held twice, as written (the live controls lay it out again from
/// there) and as arranged (what plays). A copy of the events, even packed, would put the pair at
/// 12 bytes an event or more (a loop's passes repeat it), 3× a file of 4-byte notes; the view
/// adds a few hundred bytes to the written song (a bit an event more where the arrangement skips
/// some: a muted part), and the pair stays within twice the file.
///
/// An arrangement is a piecewise map of the written timeline: every event of the arranged song is
/// either a written event, moved in time by its segment (`(offset + seconds - origin) / factor`,
/// the very operations the arrangement applies, so the same bits), or an event the arrangement
/// adds (a count-in click, a chase, a release) at seconds of its own. Consecutive events of one
/// kind and one segment form a run; a lookup is a binary search over the runs.
extension MIDIEventList {
    struct ArrangedView: Sendable, Equatable {
        /// The written song's tempo map: a written event's seconds on the written timeline.
        var map: MIDITempoMap
        /// The events the arrangement adds, in the ticks layout with tick 0 (their time is their
        /// run's), and their system-exclusive messages (each distinct one once: a loop's passes
        /// chase the same ones again).
        var added: ContiguousArray<UInt16>
        var addedSysEx: [[UInt8]]
        var runs: [Run]
        /// Which written events play, for the runs that skip some (muted notes, keys pushed off
        /// the keyboard, note-offs of notes struck before the segment): one table for each
        /// pattern, shared by the passes of a loop.
        var kept: [KeptEvents]
        /// The transposition every written note takes on the way out.
        var keyShift: MIDIKeyShift
        var count: Int

        struct Run: Sendable, Equatable {
            /// The run's first index in the arranged list.
            var start: Int
            /// Its first event's index in the written list, or in `added`.
            var first: Int
            /// The index in `kept` of the written events it plays, from `first` on; -1: all of them.
            var kept: Int
            var time: Time
        }

        enum Time: Sendable, Equatable {
            /// Added events, all at these arranged seconds.
            case added(seconds: Double)
            /// Written events of one segment: at `(offset + written seconds - origin) / factor`.
            case written(offset: Double, origin: Double, factor: Double)
        }

        /// The run holding arranged index `index`.
        private func run(holding index: Int) -> Run {
            var low = 0, high = runs.count - 1
            while low < high {
                let middle = (low + high + 1) / 2
                if runs[middle].start <= index { low = middle } else { high = middle - 1 }
            }
            return runs[low]
        }

        /// The written index of the run's `offset`-th event.
        private func writtenIndex(_ run: Run, _ offset: Int) -> Int {
            run.first + (run.kept < 0 ? offset : kept[run.kept].index(ofRank: offset))
        }

        func seconds(at index: Int, written: ContiguousArray<UInt16>) -> Double {
            let run = run(holding: index)
            switch run.time {
            case .added(let seconds):
                return seconds
            case let .written(offset, origin, factor):
                let value = MIDIEventList.value(at: writtenIndex(run, index - run.start), in: written)
                return (offset + map.seconds(atTick: Layout.ticks.tick(of: value)) - origin) / factor
            }
        }

        func message(at index: Int, written: ContiguousArray<UInt16>, sysEx: [[UInt8]]) -> MIDIMessage {
            let run = run(holding: index)
            switch run.time {
            case .added:
                return Layout.ticks.message(of: MIDIEventList.value(at: run.first + index - run.start, in: added), sysEx: addedSysEx)
            case .written:
                let value = MIDIEventList.value(at: writtenIndex(run, index - run.start), in: written)
                return keyShift.applied(to: Layout.ticks.message(of: value, sysEx: sysEx))
            }
        }

        /// What the view adds to the written song's storage, system-exclusive table and map.
        var memoryFootprint: Int {
            let arrayHeader = 32
            var bytes = arrayHeader + added.capacity * MemoryLayout<UInt16>.stride
            if !addedSysEx.isEmpty { bytes += arrayHeader + addedSysEx.capacity * MemoryLayout<[UInt8]>.stride }
            for message in addedSysEx { bytes += arrayHeader + message.capacity }
            bytes += arrayHeader + runs.capacity * MemoryLayout<Run>.stride
            bytes += arrayHeader + kept.capacity * MemoryLayout<KeptEvents>.stride
            return kept.reduce(bytes) { $0 + $1.memoryFootprint }
        }
    }

    /// Lays out an arranged song as a view of `written` (on the ticks clock), event by event in
    /// the arranged order.
    package struct ArrangedBuilder {
        private let written: MIDIEventList
        private let map: MIDITempoMap
        private let factor: Double
        private let keyShift: MIDIKeyShift
        private var added = ContiguousArray<UInt16>()
        private var addedSysEx: [[UInt8]] = []
        private var addedSysExIndex: [[UInt8]: Int] = [:]
        private var runs: [ArrangedView.Run] = []
        private var kept: [KeptEvents] = []
        /// The run of written events being laid: its written indices from `run.first` to `last`,
        /// and, once one was skipped, a bit for each of them that plays.
        private var open: (run: ArrangedView.Run, last: Int, plays: [UInt64]?)?
        package private(set) var count = 0

        /// A builder for `written`'s events moved by `factor` (the tempo) and `keyShift`; nil when
        /// `written` is not on the ticks clock (it then has no ticks to share).
        package init?(written: MIDIEventList, factor: Double, keyShift: MIDIKeyShift) {
            guard case .ticks(let map) = written.clock else { return nil }
            self.written = written
            self.map = map
            self.factor = factor
            self.keyShift = keyShift
        }

        /// Written event `index`, at `(offset + its seconds - origin) / factor`. The events it skips
        /// since the last one of the segment (an arrangement drops some) cost a bit each, not a run.
        package mutating func appendWritten(_ index: Int, offset: Double, origin: Double) {
            let time = ArrangedView.Time.written(offset: offset, origin: origin, factor: factor)
            if var current = open, current.run.time == time, index > current.last {
                open = nil  // `current` alone holds the bits, which grow in place
                if index != current.last + 1, current.plays == nil {
                    // The first skip: every event so far played.
                    current.plays = Self.bits(upTo: current.last - current.run.first + 1)
                }
                if current.plays != nil {
                    let bit = index - current.run.first
                    while bit / 64 >= current.plays!.count { current.plays!.append(0) }
                    current.plays![bit / 64] |= 1 << UInt64(bit % 64)
                }
                current.last = index
                open = current
            } else {
                closeRun()
                open = (ArrangedView.Run(start: count, first: index, kept: -1, time: time), index, nil)
            }
            count += 1
        }

        /// An event the arrangement adds, at `seconds` of the arranged song; false when it does
        /// not fit the packing (then the whole song takes the seconds clock).
        package mutating func appendAdded(_ message: MIDIMessage, seconds: Double) -> Bool {
            var sysExIndex = addedSysEx.count
            if case .systemExclusive(let bytes) = message, let known = addedSysExIndex[bytes] { sysExIndex = known }
            guard let value = Layout.ticks.pack(message, tick: 0, sysExIndex: sysExIndex) else { return false }
            if case .systemExclusive(let bytes) = message, sysExIndex == addedSysEx.count {
                addedSysEx.append(bytes)
                addedSysExIndex[bytes] = sysExIndex
            }
            closeRun()
            let first = added.count / 3
            MIDIEventList.append(value, to: &added)
            // Equal to the bit (0 and -0 are two times here), so every event keeps its own seconds.
            if case .added(let last)? = runs.last?.time, last.bitPattern == seconds.bitPattern {
                // The run goes on.
            } else {
                runs.append(ArrangedView.Run(start: count, first: first, kept: -1, time: .added(seconds: seconds)))
            }
            count += 1
            return true
        }

        /// Ends the open run of written events. Where it skipped some, it becomes one run for
        /// each unbroken stretch when that takes fewer bytes than a table of the events played (a
        /// few note-offs dropped at a seam; reading a run costs less than reading a table), or
        /// one run and its table (a muted part), shared with an earlier run of the same pattern
        /// (a loop's passes).
        private mutating func closeRun() {
            guard var (run, last, plays) = open.map({ ($0.run, $0.last, $0.plays) }) else { return }
            open = nil
            guard let plays else { return runs.append(run) }
            let count = last - run.first + 1
            let table = KeptEvents(bits: plays, count: count)
            let limit = table.memoryFootprint / MemoryLayout<ArrangedView.Run>.stride
            let stretches = KeptEvents.stretches(of: plays, count: count, limit: limit)
            if stretches.count <= limit {
                var start = run.start
                for stretch in stretches {
                    runs.append(ArrangedView.Run(start: start, first: run.first + stretch.lowerBound, kept: -1, time: run.time))
                    start += stretch.count
                }
                return
            }
            if let known = kept.firstIndex(of: table) {
                run.kept = known
            } else {
                run.kept = kept.count
                kept.append(table)
            }
            runs.append(run)
        }

        /// Words with the first `count` bits set.
        private static func bits(upTo count: Int) -> [UInt64] {
            var words = [UInt64](repeating: .max, count: count / 64)
            if count % 64 != 0 { words.append((1 << UInt64(count % 64)) - 1) }
            return words
        }

        /// The arranged list, its own arrays no larger than they need be.
        package mutating func list() -> MIDIEventList {
            closeRun()
            var exactAdded = ContiguousArray<UInt16>()
            exactAdded.reserveCapacity(added.count)
            exactAdded.append(contentsOf: added)
            var exactRuns: [ArrangedView.Run] = []
            exactRuns.reserveCapacity(runs.count)
            exactRuns.append(contentsOf: runs)
            let view = ArrangedView(map: map, added: exactAdded, addedSysEx: addedSysEx, runs: exactRuns,
                                    kept: kept, keyShift: keyShift, count: count)
            return MIDIEventList(storage: written.storage, sysEx: written.sysEx, clock: .arranged(view))
        }
    }
}

/// A transposition as an arrangement applies it: every note moves by `semitones` but on the
/// spared channel (percussion, whose keys are instruments, not pitches).
public struct MIDIKeyShift: Sendable, Equatable {
    public var semitones: Int
    public var sparedChannel: UInt8

    public init(semitones: Int, sparedChannel: UInt8) {
        self.semitones = semitones
        self.sparedChannel = sparedChannel
    }

    /// `key` moved, the same key on the spared channel, or nil when it leaves the keyboard.
    public func key(_ key: UInt8, on channel: UInt8) -> UInt8? {
        guard channel != sparedChannel, semitones != 0 else { return key }
        let moved = Int(key) + semitones
        return (0...127).contains(moved) ? UInt8(moved) : nil
    }

    /// A note message with its key moved (the view keeps only notes whose key stays on the
    /// keyboard; any other stays as it was).
    func applied(to message: MIDIMessage) -> MIDIMessage {
        guard semitones != 0 else { return message }
        switch message {
        case let .noteOn(channel, key, velocity): return .noteOn(channel: channel, key: self.key(key, on: channel) ?? key, velocity: velocity)
        case let .noteOff(channel, key, velocity): return .noteOff(channel: channel, key: self.key(key, on: channel) ?? key, velocity: velocity)
        case let .polyPressure(channel, key, pressure):
            return .polyPressure(channel: channel, key: self.key(key, on: channel) ?? key, pressure: pressure)
        default: return message
        }
    }
}

/// Which events of a stretch of a song play, a bit each, with the count playing before every 64,
/// so that the n-th playing event is found in a binary search and a few bit operations.
struct KeptEvents: Sendable, Equatable {
    private var words: [UInt64]
    /// Events playing before each word.
    private var ranks: [UInt32]

    /// The table for `count` events where bit `i` of `bits` says whether event `i` plays.
    init(bits: [UInt64], count: Int) {
        // Exactly as many words as the events need (the builder's grew as they came).
        var words: [UInt64] = []
        words.reserveCapacity((count + 63) / 64)
        words.append(contentsOf: bits.prefix((count + 63) / 64))
        words.append(contentsOf: repeatElement(0, count: (count + 63) / 64 - words.count))
        var ranks: [UInt32] = []
        ranks.reserveCapacity(words.count)
        var playing = 0
        for word in words {
            ranks.append(UInt32(playing))
            playing += word.nonzeroBitCount
        }
        self.words = words
        self.ranks = ranks
    }

    /// The index of the playing event with `rank` playing events before it.
    func index(ofRank rank: Int) -> Int {
        var low = 0, high = ranks.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if Int(ranks[middle]) <= rank { low = middle } else { high = middle - 1 }
        }
        // Then a byte at a time, then a bit at a time within the byte.
        var word = words[low]
        var left = rank - Int(ranks[low])
        var bit = 0
        while case let inByte = (word & 0xFF).nonzeroBitCount, left >= inByte {
            left -= inByte
            word >>= 8
            bit += 8
        }
        for _ in 0..<left { word &= word - 1 }
        return low * 64 + bit + word.trailingZeroBitCount
    }

    /// The unbroken stretches of set bits among the first `count` of `bits`, in order; past
    /// `limit` of them it stops (at `limit + 1`): the caller keeps the table then.
    static func stretches(of bits: [UInt64], count: Int, limit: Int) -> [Range<Int>] {
        func isSet(_ index: Int) -> Bool { index / 64 < bits.count && bits[index / 64] & (1 << UInt64(index % 64)) != 0 }
        var stretches: [Range<Int>] = []
        var index = 0
        while index < count, stretches.count <= limit {
            // Skip whole words of one value, then bit by bit.
            let wanted = isSet(index)
            var end = index
            while end < count, isSet(end) == wanted {
                if end % 64 == 0, end / 64 < bits.count, bits[end / 64] == (wanted ? .max : 0), end + 64 <= count {
                    end += 64
                } else {
                    end += 1
                }
            }
            if wanted { stretches.append(index..<end) }
            index = end
        }
        return stretches
    }

    var memoryFootprint: Int { 64 + words.capacity * MemoryLayout<UInt64>.stride + ranks.capacity * MemoryLayout<UInt32>.stride }
}
