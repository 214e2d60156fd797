/// Merges per-track timelines, each already in time order, into one.
///
/// Events within a track never go back in time, so a merge does what a sort would, in
/// O(n log k) for k tracks and without the sort's extra keyed copy of every event: for a hostile
/// file at the event limit that is the difference between a few hundred megabytes and less.
public enum MIDITimelineMerge {
    /// The events of `tracks` in time order; ties keep track order, then order within the track.
    /// (Also how an arrangement lays its count-in under the song: the first run wins ties.)
    public static func merge(_ tracks: [[MIDITimedEvent]]) -> [MIDITimedEvent] {
        Array(merge(tracks.map(ContiguousArray.init)) { $0.seconds < $1.seconds })
    }

    /// The same merge for any element: `isEarlier(a, b)` says `a` comes strictly before `b`.
    /// (The reader merges packed events by the seconds their ticks fall at.)
    static func merge<Element>(_ tracks: [ContiguousArray<Element>], isEarlier: (Element, Element) -> Bool) -> ContiguousArray<Element> {
        var runs = tracks.filter { !$0.isEmpty }
        guard !runs.isEmpty else { return [] }
        // Merge neighbours pairwise, so a lower-numbered track always stays on the left of a tie.
        while runs.count > 1 {
            var next: [ContiguousArray<Element>] = []
            next.reserveCapacity((runs.count + 1) / 2)
            var index = 0
            while index + 1 < runs.count {
                next.append(mergeTwo(runs[index], runs[index + 1], isEarlier: isEarlier))
                index += 2
            }
            if index < runs.count { next.append(runs[index]) }
            runs = next
        }
        return runs[0]
    }

    /// Stable two-way merge: on equal times the left run's event comes first.
    private static func mergeTwo<Element>(_ left: ContiguousArray<Element>, _ right: ContiguousArray<Element>,
                                          isEarlier: (Element, Element) -> Bool) -> ContiguousArray<Element> {
        var merged: ContiguousArray<Element> = []
        merged.reserveCapacity(left.count + right.count)
        var l = 0
        var r = 0
        while l < left.count && r < right.count {
            if isEarlier(right[r], left[l]) {
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
