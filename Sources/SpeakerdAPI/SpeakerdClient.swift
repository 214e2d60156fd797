/// Connects `composer-cli` to speakerd.
public enum SpeakerdClient {
    /// The daemon's D-Bus API on the chosen bus.
    public static func connect(_ bus: BusSelection) async throws(SpeakerdError) -> SpeakerdDBusClient {
        try await SpeakerdDBusClient.connect(bus)
    }
}
