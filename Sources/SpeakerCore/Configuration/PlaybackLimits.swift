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
}

/// The bytes songs still being read from clients may hold, in all and per client.
///
/// The request limits bound how many `Play` calls wait, not what each holds: 128 pipes filled to
/// just under the 16 MiB song limit and never closed held 2.28 GB until their read timeout.
public struct SongReadLimits: Sendable, Equatable {
    /// All songs being read at once, whoever sends them (`read_budget_mib`).
    public var total: Int
    /// One client's songs being read at once (`read_budget_per_client_mib`): one client
    /// cannot take the whole budget from the others.
    public var perClient: Int

    /// 64 MiB in all, 32 MiB per client: four songs at the 16 MiB limit at once, two per client.
    public init(total: Int = 64 << 20, perClient: Int = 32 << 20) {
        self.total = total
        self.perClient = perClient
    }

    public static let `default` = SongReadLimits()
}

/// What playback does when the speaker drops in the middle of a song (`on_speaker_lost`).
public enum SpeakerLostBehaviour: String, Equatable, Sendable, CaseIterable {
    /// Hold the position and resume once the speaker is back (the default).
    case pause
    /// End the song; the user starts it again.
    case stop
}
