import MIDI
/// How much the play queue may hold: songs, and the memory their parsed songs take.
///
/// Without a bound, twenty `play --queue` of one valid 15 MB song took speakerd from 43 MB to
/// 1.33 GB. A song is checked against both limits when it would join the queue; past either the
/// request gets `busy`, naming the limit, and the queue is unchanged. The song playing (or
/// waiting to start) is not in the queue.
public struct PlayQueueLimits: Sendable, Equatable {
    /// Most songs waiting in the queue (`max_queued_songs`).
    public var songs: Int
    /// Most bytes the queued songs take once parsed (`max_queue_mib`), by `MIDISong.memoryFootprint`.
    public var bytes: Int

    /// 64 songs, 128 MiB.
    public init(songs: Int = 64, bytes: Int = 128 << 20) {
        self.songs = songs
        self.bytes = bytes
    }

    public static let `default` = PlayQueueLimits()

    /// Why `file` may not join a queue of `count` songs taking `held` bytes, if it may not;
    /// `adding` is the song's own footprint (nil: not parsed yet, judge the count and a full queue only).
    func refusal(file: String, count: Int, held: Int, adding: Int?) -> String? {
        if count >= songs {
            return "the queue already holds \(count) songs, its limit (max_queued_songs = \(songs)); "
                + "try again once some have played, or 'composer-cli stop' to empty it"
        }
        let adding = adding ?? 0
        if held + adding > bytes || (adding == 0 && held >= bytes) {
            return "the queued songs take \(Mebibytes.amount(held)) of memory and \(file) would take "
                + "\(Mebibytes.amount(adding)) more, over the queue's \(Mebibytes.limit(bytes)) limit (max_queue_mib); "
                + "try again once some have played, or 'composer-cli stop' to empty it"
        }
        return nil
    }
}
