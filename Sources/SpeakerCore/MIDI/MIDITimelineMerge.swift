/// Merges per-track timelines, each already in time order, into one.
///
/// Events within a track never go back in time, so a merge does what a sort would, in
/// O(n log k) for k tracks and without the sort's extra keyed copy of every event: for a hostile
/// file at the event limit that is the difference between a few hundred megabytes and less.
public enum MIDITimelineMerge {
    /// The events of `tracks` in time order; ties keep track order, then order within the track.
    /// (Also how an arrangement lays its count-in under the song: the first run wins ties.)
    public static func merge(_ tracks: [[MIDITimedEvent]]) -> [MIDITimedEvent] {
        var runs = tracks.filter { !$0.isEmpty }
        guard !runs.isEmpty else { return [] }
        // Merge neighbours pairwise, so a lower-numbered track always stays on the left of a tie.
        while runs.count > 1 {
            var next: [[MIDITimedEvent]] = []
            next.reserveCapacity((runs.count + 1) / 2)
            var index = 0
            while index + 1 < runs.count {
                next.append(mergeTwo(runs[index], runs[index + 1]))
                index += 2
            }
            if index < runs.count { next.append(runs[index]) }
            runs = next
        }
        return runs[0]
    }

    /// Stable two-way merge: on equal times the left run's event comes first.
    private static func mergeTwo(_ left: [MIDITimedEvent], _ right: [MIDITimedEvent]) -> [MIDITimedEvent] {
        var merged: [MIDITimedEvent] = []
        merged.reserveCapacity(left.count + right.count)
        var l = 0
        var r = 0
        while l < left.count && r < right.count {
            if right[r].seconds < left[l].seconds {
                merged.append(right[r])
                r += 1
            } else {
                merged.append(left[l])
                l += 1
            }
        }
        merged.append(contentsOf: left[l...])
        merged.append(contentsOf: right[r...])
        return merged
    }
}
