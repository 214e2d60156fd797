/// Something that can take a sleep delay lock: logind on the bus, or a stand-in in tests.
public protocol SleepLockProviding: Sendable {
    /// Takes a delay inhibitor on sleep; throws ``LogindError/notRunning`` when there is no logind.
    func inhibitDelay(why: String) async throws(LogindError) -> SleepInhibitorLock
}

extension LogindClient: SleepLockProviding {}
