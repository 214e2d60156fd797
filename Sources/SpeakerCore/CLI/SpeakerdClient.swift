/// Connects `composer-cli` to speakerd.
public enum SpeakerdClient {
    /// The daemon's D-Bus API on the chosen bus.
    public static func connect(_ bus: BusSelection) async throws(SpeakerdError) -> any SpeakerdControl {
        // The D-Bus-backed client lands with the D-Bus layer (branch dbus); until then there is
        // no transport, and saying so is better than pretending.
        throw .unreachable(bus: bus.description, reason: "this build has no D-Bus client yet")
    }
}
