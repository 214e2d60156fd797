/// Turns one MTrk chunk's bytes into events with absolute ticks.
///
/// Everything an event claims (data bytes, meta and sysex lengths) is checked against the end of
/// its chunk, so a malformed track is an error at the exact byte, never a read into the next
/// chunk. Running status follows `MIDIRunningStatusPolicy`; system messages follow
/// `MIDISystemMessage`'s policy.
struct MIDITrackParser {
    private var reader: MIDIByteReader
    private let trackNumber: Int
    private let limits: MIDIReadLimits
    private let policy: MIDIRunningStatusPolicy

    private var tick = 0
    private var runningStatus: UInt8?
    /// Where a non-channel event interrupted running status (the spec says it is cancelled there).
    private var interruptedAt: Int?
    /// An F0 sysex whose packets have not yet reached their closing F7.
    private var openSysEx: (offset: Int, bytes: [UInt8])?
    private var events: [MIDITrackEvent] = []
    /// Set when a song is read straight from its bytes (`MIDIFileReader.read`): each event is
    /// handed on as it is read instead of kept, so the tick-level model of a large file never
    /// exists beside the song made of it. The track then comes back without events.
    private let handOn: ((MIDITrackEvent) -> Void)?
    private var name: String?
    /// The file's warnings so far; the caller takes it back after `parse` to pass to the next track.
    private(set) var warnings: MIDIWarningLog

    /// `trackNumber` is 1-based, as users count tracks in messages.
    init(_ bytes: [UInt8], chunk: MIDIChunkReader.TrackChunk, trackNumber: Int, limits: MIDIReadLimits,
         policy: MIDIRunningStatusPolicy, warnings: MIDIWarningLog, handOn: ((MIDITrackEvent) -> Void)? = nil) {
        self.handOn = handOn
        reader = MIDIByteReader(bytes, from: chunk.data.lowerBound, to: chunk.data.upperBound)
        self.trackNumber = trackNumber
        self.limits = limits
        self.policy = policy
        self.warnings = warnings
    }

    /// Parses the whole chunk. `eventCount` is shared by all tracks so the limit covers the file.
    mutating func parse(chunkOffset: Int, eventCount: inout Int) throws(MIDIFileError) -> MIDITrack {
        while !reader.isAtEnd {
            let deltaOffset = reader.offset
            switch reader.readVLQ() {
            case .value(let delta): tick += delta
            case .truncated: throw pastEnd("a delta time", at: deltaOffset)
            case .tooLong: throw MIDIFileError(.vlqTooLong, at: deltaOffset)
            }
            let eventOffset = reader.offset
            guard let first = reader.peek() else { throw pastEnd("the event after a delta time", at: deltaOffset) }
            eventCount += 1
            guard eventCount <= limits.maxEvents else {
                throw MIDIFileError(.limitExceeded(.events, value: eventCount, limit: limits.maxEvents), at: eventOffset)
            }
            if first == 0xFF {
                if try readMeta(at: eventOffset) { return finish(chunkOffset: chunkOffset, endOfTrack: true) }
            } else if first == 0xF0 || first == 0xF7 {
                try readSysEx(at: eventOffset)
            } else if first >= 0xF0 {
                try readSystemMessage(at: eventOffset)
            } else {
                try readChannelMessage(at: eventOffset)
            }
        }
        return finish(chunkOffset: chunkOffset, endOfTrack: false)
    }

    private mutating func finish(chunkOffset: Int, endOfTrack: Bool) -> MIDITrack {
        if endOfTrack, reader.remaining > 0 {
            warn("ignored \(reader.remaining) bytes after track \(trackNumber)'s End of Track event", at: reader.offset)
        }
        if !endOfTrack {
            // Many writers forget End of Track; the chunk length still says where the track ends.
            warn("track \(trackNumber) has no End of Track event; it ends with its last event", at: reader.end)
        }
        if let openSysEx {
            warn("dropped a system-exclusive message that never reached its closing F7", at: openSysEx.offset)
        }
        return MIDITrack(events: events, name: name, endTick: tick, chunkOffset: chunkOffset)
    }

    // MARK: - Channel messages

    private mutating func readChannelMessage(at offset: Int) throws(MIDIFileError) {
        let status: UInt8
        if let byte = reader.peek(), byte >= 0x80 {
            status = byte
            _ = reader.readByte()
            runningStatus = status
            interruptedAt = nil
        } else {
            guard let running = runningStatus else {
                throw MIDIFileError(.dataByteWithoutStatus(reader.peek() ?? 0), at: offset)
            }
            if let interruptedAt {
                warn("running status \(MIDIByteText.hex(running)) continues after the event at byte \(interruptedAt), "
                    + "which the standard says cancels it; read as \(MIDIByteText.hex(running)) (the only meaningful reading)", at: offset)
                self.interruptedAt = nil
            }
            status = running
        }
        let kind = status & 0xF0
        let channel = status & 0x0F
        let first = try dataByte(in: MIDIChannelMessageName.of(kind))
        if kind == 0xC0 || kind == 0xD0 {
            let message: MIDIMessage = kind == 0xC0
                ? .programChange(channel: channel, program: first)
                : .channelPressure(channel: channel, pressure: first)
            append(.channel(message), at: offset)
            return
        }
        let second = try dataByte(in: MIDIChannelMessageName.of(kind))
        let message: MIDIMessage = switch kind {
        case 0x80: .noteOff(channel: channel, key: first, velocity: second)
        case 0x90: .noteOn(channel: channel, key: first, velocity: second)
        case 0xA0: .polyPressure(channel: channel, key: first, pressure: second)
        case 0xB0: .controlChange(channel: channel, controller: first, value: second)
        default: .pitchBend(channel: channel, value: UInt16(second) << 7 | UInt16(first))
        }
        append(.channel(message), at: offset)
    }

    private mutating func dataByte(in message: @autoclosure () -> String) throws(MIDIFileError) -> UInt8 {
        let offset = reader.offset
        guard let byte = reader.readByte() else { throw pastEnd(message(), at: offset) }
        guard byte < 0x80 else { throw MIDIFileError(.expectedDataByte(found: byte, message: message()), at: offset) }
        return byte
    }

    // MARK: - Meta events

    /// Reads a meta event; returns true at End of Track.
    private mutating func readMeta(at offset: Int) throws(MIDIFileError) -> Bool {
        _ = reader.readByte()
        guard let type = reader.readByte() else { throw pastEnd("a meta event", at: offset) }
        let data = try lengthPrefixedData(of: "meta event \(MIDIByteText.hex(type))", at: offset, maxLength: nil)
        interruptRunningStatus(at: offset)
        switch type {
        case MIDIMetaType.endOfTrack:
            guard data.isEmpty else { throw MIDIFileError(.badMetaLength(type: type, length: data.count, expected: 0), at: offset) }
            append(.meta(type: type, data: data), at: offset)
            return true
        case MIDIMetaType.tempo:
            guard data.count == 3 else { throw MIDIFileError(.badMetaLength(type: type, length: data.count, expected: 3), at: offset) }
            guard data != [0, 0, 0] else { throw MIDIFileError(.zeroTempo, at: offset) }
        case MIDIMetaType.trackName where name == nil:
            name = MIDIMetaText.decode(data)
        default:
            break
        }
        append(.meta(type: type, data: data), at: offset)
        return false
    }

    // MARK: - System exclusive

    /// F0 starts a sysex (possibly split into F7 continuation packets); an F7 outside an open
    /// sysex is an escape carrying raw bytes.
    private mutating func readSysEx(at offset: Int) throws(MIDIFileError) {
        let status = reader.readByte() ?? 0
        let pending = openSysEx?.bytes.count ?? 0
        let data = try lengthPrefixedData(of: status == 0xF0 ? "system-exclusive event" : "F7 escape event",
                                          at: offset, maxLength: limits.maxSysExBytes - pending)
        interruptRunningStatus(at: offset)
        if status == 0xF0 {
            if let open = openSysEx {
                warn("dropped a system-exclusive message that never reached its closing F7", at: open.offset)
            }
            openSysEx = (offset, [])
        } else if openSysEx == nil {
            append(.escape(data), at: offset)
            return
        }
        openSysEx?.bytes.append(contentsOf: data)
        if data.last == 0xF7, let complete = openSysEx {
            openSysEx = nil
            append(.systemExclusive(Array(complete.bytes.dropLast())), at: complete.offset)
        }
    }

    // MARK: - System common and real-time messages

    private mutating func readSystemMessage(at offset: Int) throws(MIDIFileError) {
        let status = reader.readByte() ?? 0
        guard let dataCount = MIDISystemMessage.dataByteCount(of: status) else {
            throw MIDIFileError(.undefinedSystemCommon(status), at: offset)
        }
        var data: [UInt8] = []
        for _ in 0..<dataCount { data.append(try dataByte(in: "system message \(MIDIByteText.hex(status))")) }
        if MIDISystemMessage.isCommon(status) { interruptRunningStatus(at: offset) }
        warn("skipped system message \(MIDIByteText.hex(status)) (\(MIDISystemMessage.name(of: status))), which has no meaning in a file", at: offset)
        append(.ignoredSystemMessage(status: status, data: data), at: offset)
    }

    // MARK: - Helpers

    /// A VLQ length and that many bytes, all inside the chunk.
    private mutating func lengthPrefixedData(of what: @autoclosure () -> String, at offset: Int, maxLength: Int?) throws(MIDIFileError) -> [UInt8] {
        let lengthOffset = reader.offset
        let length: Int
        switch reader.readVLQ() {
        case .value(let value): length = value
        case .truncated: throw pastEnd(what(), at: offset)
        case .tooLong: throw MIDIFileError(.vlqTooLong, at: lengthOffset)
        }
        if let maxLength, length > maxLength {
            throw MIDIFileError(.limitExceeded(.sysExBytes, value: length + limits.maxSysExBytes - maxLength,
                                               limit: limits.maxSysExBytes), at: offset)
        }
        guard let data = reader.readBytes(length) else { throw pastEnd(what(), at: offset) }
        return data
    }

    private mutating func interruptRunningStatus(at offset: Int) {
        switch policy {
        case .cancelledByNonChannelEvents: runningStatus = nil
        case .continuesAcrossNonChannelEvents: if runningStatus != nil { interruptedAt = offset }
        }
    }

    private mutating func append(_ kind: MIDITrackEvent.Kind, at offset: Int) {
        let event = MIDITrackEvent(tick: tick, offset: offset, kind: kind)
        if let handOn { handOn(event) } else { events.append(event) }
    }

    private mutating func warn(_ message: String, at offset: Int) {
        warnings.add(message, at: offset)
    }

    private func pastEnd(_ what: String, at offset: Int) -> MIDIFileError {
        MIDIFileError(.eventPastEndOfTrack(event: what, track: trackNumber), at: offset)
    }
}
