/// Collects a file's warnings up to `MIDIReadLimits.maxWarnings`, counting the ones past it.
///
/// Shared by the chunk reader and every track parser so the cap covers the whole file.
struct MIDIWarningLog {
    let limit: Int
    private(set) var kept: [MIDIFileWarning] = []
    private(set) var dropped = 0

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    mutating func add(_ message: String, at offset: Int) {
        if kept.count < limit {
            kept.append(MIDIFileWarning(offset: offset, message: message))
        } else {
            dropped += 1
        }
    }

    mutating func add(contentsOf warnings: [MIDIFileWarning]) {
        for warning in warnings { add(warning.message, at: warning.offset) }
    }

    /// The kept warnings, followed by a count of the dropped ones if any.
    func finished(endOffset: Int) -> [MIDIFileWarning] {
        guard dropped > 0 else { return kept }
        return kept + [MIDIFileWarning(offset: endOffset, message: "\(dropped) more warnings not listed")]
    }
}
