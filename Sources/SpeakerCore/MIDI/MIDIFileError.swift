/// Why a file could not be read as a Standard MIDI File, and where.
///
/// Every problem the reader finds is one of these, so callers (the CLI, the daemon) can print
/// `description` as the single line a user sees: it names the byte offset in the file (counted
/// from 0, RMID wrapper included) and what was wrong there.
public struct MIDIFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset in the file where the problem was found; `nil` when it concerns the whole file.
    public var offset: Int?
    public var kind: Kind

    public init(_ kind: Kind, at offset: Int? = nil) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String {
        guard let offset else { return kind.description }
        return "byte \(offset): \(kind.description)"
    }
}

extension MIDIFileError {
    /// The problems the reader reports; each has a one-line human description.
    public enum Kind: Sendable, Equatable, CustomStringConvertible {
        /// The file has no bytes at all.
        case empty
        /// The file starts with neither `MThd` nor an RMID wrapper; `start` is its first bytes, printable.
        case notMIDI(start: String)
        /// A RIFF file whose form type is not `RMID` (a WAV or AVI file, say).
        case riffButNotRMID(formType: String)
        /// An RMID file without the `data` chunk that holds the MIDI file.
        case rmidWithoutData
        /// A chunk (or the file's header) promises more bytes than the file holds.
        case truncated(what: String, fileEnd: Int, declaredEnd: Int)
        /// The file ended before the header said it would (fewer track chunks than declared).
        case missingTracks(declared: Int, found: Int)
        /// The MThd chunk is shorter than the 6 bytes that hold format, track count and division.
        case headerTooShort(length: Int)
        case unsupportedFormat(UInt16)
        case noTracks
        case invalidDivision(String)
        case vlqTooLong
        /// An event runs past the end of its track chunk.
        case eventPastEndOfTrack(event: String, track: Int)
        /// A data byte where a status byte was needed and no running status applies.
        case dataByteWithoutStatus(UInt8)
        /// A status byte (≥ 0x80) inside a message where a data byte (0–127) belongs.
        case expectedDataByte(found: UInt8, message: String)
        /// An undefined system common status (0xF4, 0xF5): its length is unknown, so the bytes after
        /// it cannot be told apart from the next event.
        case undefinedSystemCommon(UInt8)
        case badMetaLength(type: UInt8, length: Int, expected: Int)
        case zeroTempo
        case limitExceeded(MIDIReadLimits.Limit, value: Int, limit: Int)
        /// A file larger than the reader takes (`MIDIReadLimits.maxFileBytes`): `bytes` is its size
        /// when it is known (a regular file), nil for a stream that went on past the limit.
        case fileTooLarge(bytes: Int?, limit: Int)
        /// The file could not be read from disk.
        case unreadable(path: String, reason: String)

        public var description: String {
            switch self {
            case .empty:
                return "file is empty"
            case .notMIDI(let start):
                return "not a MIDI file: starts with '\(start)' instead of 'MThd'"
            case .riffButNotRMID(let formType):
                return "not a MIDI file: starts with 'RIFF' but is not RMID (its form type is '\(formType)')"
            case .rmidWithoutData:
                return "RMID file has no 'data' chunk holding the MIDI file"
            case .truncated(let what, let fileEnd, let declaredEnd):
                return "truncated: \(what) ends at byte \(fileEnd) but its chunk says \(declaredEnd)"
            case .missingTracks(let declared, let found):
                return "truncated: the header declares \(declared) tracks but the file holds \(found)"
            case .headerTooShort(let length):
                return "MThd header is \(length) bytes long; it must be at least 6"
            case .unsupportedFormat(let format):
                return "MIDI file format \(format) is not one of 0, 1 or 2"
            case .noTracks:
                return "the header declares no tracks"
            case .invalidDivision(let why):
                return "invalid time division: \(why)"
            case .vlqTooLong:
                return "variable-length quantity longer than 4 bytes"
            case .eventPastEndOfTrack(let event, let track):
                return "\(event) runs past the end of track \(track)'s chunk"
            case .dataByteWithoutStatus(let byte):
                return "data byte \(MIDIByteText.hex(byte)) with no status byte before it (no running status to apply)"
            case .expectedDataByte(let found, let message):
                return "expected a data byte (0-127) in \(message) but found \(MIDIByteText.hex(found))"
            case .undefinedSystemCommon(let status):
                return "undefined system message \(MIDIByteText.hex(status)): its length is unknown, so the rest of the track cannot be read"
            case .badMetaLength(let type, let length, let expected):
                return "meta event \(MIDIByteText.hex(type)) has length \(length); it must be \(expected)"
            case .zeroTempo:
                return "tempo of 0 microseconds per quarter note"
            case .limitExceeded(let limit, let value, let max):
                return "\(limit.noun) \(value) exceeds the limit of \(max)"
            case .fileTooLarge(let bytes?, let limit):
                return "it is \(Mebibytes.amount(bytes, over: limit)), over the \(Mebibytes.limit(limit)) limit for one song"
            case .fileTooLarge(nil, let limit):
                return "it is larger than the \(Mebibytes.limit(limit)) limit for one song"
            case .unreadable(let path, let reason):
                return "cannot read \(path): \(reason)"
            }
        }
    }
}
