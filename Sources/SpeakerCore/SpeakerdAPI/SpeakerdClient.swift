/// Connects `composer-cli` to speakerd.
public enum SpeakerdClient {
    /// The daemon's D-Bus API on the chosen bus.
    public static func connect(_ bus: BusSelection) async throws(SpeakerdError) -> SpeakerdDBusClient {
        try await SpeakerdDBusClient.connect(bus)
    }

    /// speakerd's status if it is running on `bus` now, else nil: never starts it (a name without
    /// an owner is not called, so D-Bus activation does not launch it for a look).
    public static func statusIfRunning(_ bus: BusSelection) async -> StatusReport? {
        guard let client = try? await connect(bus), await client.daemonInstance() != nil else { return nil }
        return try? await client.status()
    }
}
