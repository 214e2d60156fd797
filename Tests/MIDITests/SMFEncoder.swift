import MIDI
import TestSupport

/// A random song description and its encoding as SMF bytes, for round-trip property tests.
///
/// The encoder makes the choices a real writer might (running status or not, running status
/// kept across meta and sysex events, sysex split into packets, redundant VLQ bytes), so one
/// description has many valid encodings; the reader must give the same song for each.
struct RandomSong {
    enum Event {
        case channel(MIDIMessage)
        case tempo(Int)
        case text(String)
        case sysex([UInt8])
    }

    var format: UInt16
    var ppq: Int
    /// Per track: (delta ticks, event); then the End of Track delta.
    var tracks: [(events: [(delta: Int, event: Event)], endDelta: Int)]

    static func make(using rng: inout SplitMix64) -> RandomSong {
        let format = UInt16.random(in: 0...2, using: &rng)
        let trackCount = format == 0 ? 1 : Int.random(in: 1...4, using: &rng)
        let tracks = (0..<trackCount).map { _ in
            let events = (0..<Int.random(in: 0...40, using: &rng)).map { _ in (delta: randomDelta(&rng), event: randomEvent(&rng)) }
            return (events: events, endDelta: randomDelta(&rng))
        }
        return RandomSong(format: format, ppq: Int.random(in: 1...960, using: &rng), tracks: tracks)
    }

    private static func randomDelta(_ rng: inout SplitMix64) -> Int {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0..<4: 0
        case 4..<9: Int.random(in: 1...500, using: &rng)
        default: Int.random(in: 0...0x1F_FFFF, using: &rng)
        }
    }

    private static func randomEvent(_ rng: inout SplitMix64) -> Event {
        let channel = UInt8.random(in: 0...15, using: &rng)
        func data() -> UInt8 { UInt8.random(in: 0...127, using: &rng) }
        switch Int.random(in: 0..<20, using: &rng) {
        case 0: return .tempo(Int.random(in: 1000...0xFF_FFFF, using: &rng))
        case 1: return .text(String(repeating: "a", count: Int.random(in: 0...20, using: &rng)))
        case 2: return .sysex((0..<Int.random(in: 0...20, using: &rng)).map { _ in data() })
        case 3: return .channel(.programChange(channel: channel, program: data()))
        case 4: return .channel(.channelPressure(channel: channel, pressure: data()))
        case 5: return .channel(.pitchBend(channel: channel, value: UInt16.random(in: 0...16383, using: &rng)))
        case 6: return .channel(.controlChange(channel: channel, controller: data(), value: data()))
        case 7: return .channel(.polyPressure(channel: channel, key: data(), pressure: data()))
        case 8..<14: return .channel(.noteOn(channel: channel, key: data(), velocity: data()))
        default: return .channel(.noteOff(channel: channel, key: data(), velocity: data()))
        }
    }

    // MARK: - Encoding

    func encode(using rng: inout SplitMix64) -> [UInt8] {
        SMF.file(format: format, division: UInt16(ppq), tracks: tracks.map { encodeTrack($0, using: &rng) })
    }

    private func encodeTrack(_ track: (events: [(delta: Int, event: Event)], endDelta: Int), using rng: inout SplitMix64) -> [UInt8] {
        var bytes: [UInt8] = []
        var running: UInt8?
        for (delta, event) in track.events {
            bytes += Self.vlq(delta, padded: Int.random(in: 0..<8, using: &rng) == 0)
            switch event {
            case .channel(let message):
                let (status, data) = Self.channelBytes(message)
                if status != running || Bool.random(using: &rng) { bytes.append(status) }
                running = status
                bytes += data
            case .tempo(let microseconds):
                bytes += [0xFF, 0x51, 0x03, UInt8(microseconds >> 16), UInt8(microseconds >> 8 & 0xFF), UInt8(microseconds & 0xFF)]
            case .text(let text):
                bytes += [0xFF, 0x01] + Self.vlq(text.utf8.count) + Array(text.utf8)
            case .sysex(let body):
                // Split into an F0 packet and an F7 continuation half of the time, all at this delta.
                let whole = body + [0xF7]
                if whole.count > 1 && Bool.random(using: &rng) {
                    let cut = Int.random(in: 1..<whole.count, using: &rng)
                    bytes += [0xF0] + Self.vlq(cut) + whole[..<cut] + [0x00, 0xF7] + Self.vlq(whole.count - cut) + whole[cut...]
                } else {
                    bytes += [0xF0] + Self.vlq(whole.count) + whole
                }
            }
        }
        return bytes + Self.vlq(track.endDelta) + [0xFF, 0x2F, 0x00]
    }

    /// A VLQ, optionally with redundant leading 0x80 bytes up to the 4-byte maximum.
    static func vlq(_ value: Int, padded: Bool = false) -> [UInt8] {
        var groups = [UInt8(value & 0x7F)]
        var rest = value >> 7
        while rest > 0 {
            groups.insert(UInt8(rest & 0x7F), at: 0)
            rest >>= 7
        }
        if padded { while groups.count < 4 { groups.insert(0, at: 0) } }
        return groups.enumerated().map { $0.offset < groups.count - 1 ? $0.element | 0x80 : $0.element }
    }

    static func channelBytes(_ message: MIDIMessage) -> (UInt8, [UInt8]) {
        switch message {
        case .noteOff(let c, let k, let v): (0x80 | c, [k, v])
        case .noteOn(let c, let k, let v): (0x90 | c, [k, v])
        case .polyPressure(let c, let k, let p): (0xA0 | c, [k, p])
        case .controlChange(let c, let n, let v): (0xB0 | c, [n, v])
        case .programChange(let c, let p): (0xC0 | c, [p])
        case .channelPressure(let c, let p): (0xD0 | c, [p])
        case .pitchBend(let c, let v): (0xE0 | c, [UInt8(v & 0x7F), UInt8(v >> 7)])
        case .systemExclusive: (0xF0, [])
        }
    }
}
