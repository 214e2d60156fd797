import MIDI
import Testing
import TestSupport

/// Mutations that hit what a reader trusts: lengths, status bytes, continuation bits, the end.
enum Mutation: CaseIterable {
    case flipBit, setInterestingByte, truncate, insertRandomBytes, deleteRange, duplicateRange, overwriteLength, randomFile

    static let interesting: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0x81, 0x90, 0xC0, 0xF0, 0xF4, 0xF7, 0xF8, 0xFF, 0x2F, 0x51]

    func apply(to input: [UInt8], using rng: inout SplitMix64) -> [UInt8] {
        var bytes = input
        let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &rng)
        switch self {
        case .flipBit where !bytes.isEmpty:
            bytes[position] ^= 1 << UInt8.random(in: 0...7, using: &rng)
        case .setInterestingByte where !bytes.isEmpty:
            bytes[position] = Self.interesting.randomElement(using: &rng)!
        case .truncate:
            bytes.removeLast(bytes.count - position)
        case .insertRandomBytes:
            bytes.insert(contentsOf: (0..<Int.random(in: 1...16, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: position)
        case .deleteRange where !bytes.isEmpty:
            bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...32, using: &rng)))
        case .duplicateRange where !bytes.isEmpty:
            bytes.insert(contentsOf: bytes[position..<min(bytes.count, position + Int.random(in: 1...64, using: &rng))], at: position)
        case .overwriteLength where bytes.count >= 4:
            // A 32-bit big-endian value: hits chunk lengths, and VLQs/lengths when misaligned.
            let at = Int.random(in: 0...(bytes.count - 4), using: &rng)
            let value = [UInt32.max, 0x7FFF_FFFF, 0, 6, UInt32(bytes.count), UInt32.random(in: 0...UInt32.max, using: &rng)]
                .randomElement(using: &rng)!
            for index in 0..<4 { bytes[at + index] = UInt8(truncatingIfNeeded: value >> (24 - 8 * index)) }
        case .randomFile:
            let prefix = Bool.random(using: &rng) ? Array(input.prefix(14)) : []
            bytes = prefix + (0..<Int.random(in: 0...512, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        default:
            break
        }
        return bytes
    }
}

@Suite("Mutation fuzzing")
struct MutationFuzzTests {
    static let shards = 8
    static let casesPerShard = 2_500

    /// Seeds: the corpus files small enough to mutate thousands of times in a debug build, plus
    /// hand-built files for the paths the corpus lacks (RMID, SMPTE, format 2, sysex packets).
    static func seeds() -> [[UInt8]] {
        let corpus = Corpus.fileNames().compactMap { Corpus.bytes(of: $0) }.filter { $0.count <= 4096 }
        let smpte = UInt16(UInt8(bitPattern: -25)) << 8 | 40
        let handBuilt: [[UInt8]] = [
            SMF.file(format: 2, tracks: [SMF.tempo(1_000_000) + [0x00, 0x90, 0x3C, 0x64, 0x60, 0x3C, 0x00] + SMF.endOfTrack,
                                         [0x00, 0xF0, 0x02, 0x41, 0x00, 0x10, 0xF7, 0x02, 0x10, 0xF7] + SMF.endOfTrack]),
            SMF.file(division: smpte, tracks: [[0x00, 0xC0, 0x05, 0x81, 0x00, 0xE0, 0x00, 0x40] + SMF.endOfTrack]),
            Array("RIFF".utf8) + SMF.le32(4 + 8 + 30) + Array("RMIDdata".utf8) + SMF.le32(30)
                + SMF.file(tracks: [[0x00, 0x90, 0x3C, 0x64] + SMF.endOfTrack]),
        ]
        return corpus + handBuilt
    }

    @Test("mutated, truncated and random files never crash or hang, and every error explains itself",
          arguments: 0..<shards)
    func mutationsAreSafe(shard: Int) throws {
        let seeds = Self.seeds()
        try #require(seeds.count > 3, "the corpus seeds are missing")
        var rng = SplitMix64(seed: 0x5EED_0000 + UInt64(shard))
        let clock = ContinuousClock()
        for caseNumber in 0..<Self.casesPerShard {
            var bytes = seeds.randomElement(using: &rng)!
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                bytes = Mutation.allCases.randomElement(using: &rng)!.apply(to: bytes, using: &rng)
            }
            // A hang guard, not a speed test: a linear reader handles these few KB in microseconds.
            let start = clock.now
            let outcome = Result { () throws(MIDIFileError) in try MIDIFileReader.read(bytes) }
            let elapsed = clock.now - start
            #expect(elapsed < .seconds(2), "shard \(shard) case \(caseNumber) took \(elapsed)")
            switch outcome {
            case .success(let song): checkInvariants(song, shard: shard, caseNumber: caseNumber)
            case .failure(let error): checkExplains(error, fileSize: bytes.count, shard: shard, caseNumber: caseNumber)
            }
        }
    }

    @Test("whole corpus files cut at every length are read or rejected cleanly")
    func everyTruncation() throws {
        for name in Corpus.fileNames() {
            guard let bytes = Corpus.bytes(of: name), bytes.count <= 2048 else { continue }
            for length in 0..<bytes.count {
                if case .failure(let error) = Result(catching: { () throws(MIDIFileError) in try MIDIFileReader.read(bytes.prefix(length)) }) {
                    checkExplains(error, fileSize: length, shard: -1, caseNumber: length)
                }
            }
        }
    }

    func checkInvariants(_ song: MIDISong, shard: Int, caseNumber: Int) {
        let context: Comment = "shard \(shard) case \(caseNumber)"
        #expect(song.durationSeconds.isFinite && song.durationSeconds >= 0, context)
        #expect(song.durationSeconds <= MIDIReadLimits.default.maxDurationSeconds, context)
        #expect(zip(song.events, song.events.dropFirst()).allSatisfy { $0.seconds <= $1.seconds }, context)
        #expect(song.events.allSatisfy { $0.seconds >= 0 && $0.seconds <= song.durationSeconds }, context)
        #expect(song.events.allSatisfy { $0.message.isWellFormed }, context)
    }

    func checkExplains(_ error: MIDIFileError, fileSize: Int, shard: Int, caseNumber: Int) {
        let context: Comment = "shard \(shard) case \(caseNumber): \(error)"
        #expect(!error.description.isEmpty && !error.description.contains("\n"), context)
        if let offset = error.offset {
            #expect(offset >= 0 && offset <= fileSize, context)
            #expect(error.description.hasPrefix("byte \(offset): "), context)
        }
    }
}

extension MIDIMessage {
    /// Channels 0–15, data bytes 0–127, pitch bend 0–16383.
    var isWellFormed: Bool {
        switch self {
        case .noteOff(let channel, let key, let value), .noteOn(let channel, let key, let value),
             .polyPressure(let channel, let key, let value), .controlChange(let channel, let key, let value):
            channel < 16 && key < 128 && value < 128
        case .programChange(let channel, let value), .channelPressure(let channel, let value):
            channel < 16 && value < 128
        case .pitchBend(let channel, let value):
            channel < 16 && value < 16384
        case .systemExclusive:
            true
        }
    }
}
