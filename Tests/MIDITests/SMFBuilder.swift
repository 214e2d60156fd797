import MIDI

/// Hand-built Standard MIDI File bytes for fixtures, so every test shows exactly the bytes it reads.
enum SMF {
    static func be32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func le32(_ value: Int) -> [UInt8] { be32(value).reversed() }

    static func chunk(_ tag: String, _ body: [UInt8]) -> [UInt8] {
        Array(tag.utf8) + be32(body.count) + body
    }

    static func header(format: UInt16 = 0, tracks: UInt16 = 1, division: UInt16 = 96) -> [UInt8] {
        chunk("MThd", [UInt8(format >> 8), UInt8(format & 0xFF), UInt8(tracks >> 8), UInt8(tracks & 0xFF),
                       UInt8(division >> 8), UInt8(division & 0xFF)])
    }

    /// A whole file: header plus one MTrk chunk per body (bodies are raw event bytes).
    static func file(format: UInt16 = 0, division: UInt16 = 96, tracks: [[UInt8]]) -> [UInt8] {
        header(format: format, tracks: UInt16(tracks.count), division: division) + tracks.flatMap { chunk("MTrk", $0) }
    }

    /// Delta time 0, End of Track.
    static let endOfTrack: [UInt8] = [0x00, 0xFF, 0x2F, 0x00]

    /// A tempo meta event (delta 0) of `microseconds` per quarter note.
    static func tempo(_ microseconds: Int, delta: [UInt8] = [0x00]) -> [UInt8] {
        delta + [0xFF, 0x51, 0x03, UInt8(microseconds >> 16 & 0xFF), UInt8(microseconds >> 8 & 0xFF), UInt8(microseconds & 0xFF)]
    }

    /// A track name meta event (delta 0).
    static func name(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        return [0x00, 0xFF, 0x03, UInt8(bytes.count)] + bytes
    }

    /// Offset of the first MTrk chunk's event bytes in a file made by `file(...)`.
    static let firstEventOffset = 14 + 8
}

extension MIDISong {
    /// The channel messages alone, in order, for comparing against expectations.
    var messages: [MIDIMessage] { events.map(\.message) }
    var times: [Double] { events.map(\.seconds) }
}

/// Reads `bytes`, returning the error it throws (or nil when it parses).
func readError(_ bytes: [UInt8], limits: MIDIReadLimits = .default,
               runningStatus: MIDIRunningStatusPolicy = .continuesAcrossNonChannelEvents) -> MIDIFileError? {
    do {
        _ = try MIDIFileReader.read(bytes, limits: limits, runningStatus: runningStatus)
        return nil
    } catch {
        return error
    }
}
