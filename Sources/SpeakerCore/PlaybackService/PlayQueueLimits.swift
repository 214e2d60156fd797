import Configuration
import MIDI

extension PlayQueueLimits {
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
