import AsyncSignals
/// Notices a real-time device that stopped asking for audio while its song still plays.
///
/// A live driver asks for a period every few milliseconds, paused or not (it plays silence while
/// paused), so a pull count that has not moved over a whole `stallLimit` means the driver thread
/// is gone or stuck. The watchdog looks `StallWindow.looksPerLimit` times a limit, so a stall is
/// seen at most a third of a limit after it has lasted the limit, wherever it began between two
/// looks (looking once a limit saw it up to two limits late, and a stall a little shorter than
/// two limits not at all).
enum DeviceWatchdog {
    /// Returns when the song ends (false), the calling task is cancelled (false), or the device
    /// has not pulled for `stallLimit` while the song went on (true).
    ///
    /// - Parameter pullsBefore: the source's pull count before the device was opened, so a device
    ///   that never pulls at all is noticed too.
    static func watch(
        _ source: PlaybackSource, clock: any Clock<Duration>, stallLimit: Duration, pullsBefore: Int
    ) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await source.waitUntilEnded()
                return false
            }
            group.addTask { await look(at: source, on: clock, stallLimit: stallLimit, pullsBefore: pullsBefore) }
            let stalled = await group.next() ?? false
            group.cancelAll()
            return stalled
        }
    }

    /// Looks at the pull count every third of a limit until the window says it stalled (true)
    /// or the task is cancelled (false).
    private static func look<C: Clock<Duration>>(
        at source: PlaybackSource, on clock: C, stallLimit: Duration, pullsBefore: Int
    ) async -> Bool {
        var window = StallWindow(limit: stallLimit, start: clock.now, pulls: pullsBefore)
        while true {
            do { try await clock.sleep(for: window.interval) } catch { return false }
            if window.look(at: clock.now, pulls: source.devicePulls), !source.hasEnded { return true }
        }
    }
}

/// The watchdog's decision, on looks it is handed: has the pull count stood still for a whole
/// `limit`? Each look keeps its own instant, so a late wake-up is judged by the time that really
/// passed, never by the number of looks.
struct StallWindow<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    /// Looks per limit: a stall is seen within `limit + limit / looksPerLimit` of the last pull.
    static var looksPerLimit: Int { 3 }

    let limit: Duration
    /// The looks still needed, oldest first: the newest at least `limit` old, and every later one.
    private var looks: [(at: Instant, pulls: Int)]

    init(limit: Duration, start: Instant, pulls: Int) {
        self.limit = limit
        looks = [(start, pulls)]
    }

    /// How long to wait between looks.
    var interval: Duration { limit / Self.looksPerLimit }

    /// Takes a look; true when the count has not moved since a look at least `limit` ago.
    mutating func look(at now: Instant, pulls: Int) -> Bool {
        looks.append((now, pulls))
        let limitAgo = now.advanced(by: .zero - limit)
        // Keep the newest look at or before `limitAgo`: it is the one a stall is judged from.
        while looks.count > 1, looks[1].at <= limitAgo { looks.removeFirst() }
        guard let oldest = looks.first, oldest.at <= limitAgo else { return false }
        return oldest.pulls == pulls
    }
}
