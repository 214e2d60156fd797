import AsyncSignals
/// Notices a real-time device that stopped asking for audio while its song still plays.
///
/// A live driver asks for a period every few milliseconds, paused or not (it plays silence while
/// paused), so a pull count that has not moved over a whole `stallLimit` means the driver thread
/// is gone or stuck. Each check sleeps `stallLimit` after the previous one (not to fixed
/// instants), so a late wake-up never compares two checks taken a moment apart.
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
            group.addTask {
                var lastPulls = pullsBefore
                while true {
                    do { try await clock.sleep(for: stallLimit) } catch { return false }
                    let pulls = source.devicePulls
                    if pulls == lastPulls, !source.hasEnded { return true }
                    lastPulls = pulls
                }
            }
            let stalled = await group.next() ?? false
            group.cancelAll()
            return stalled
        }
    }
}
