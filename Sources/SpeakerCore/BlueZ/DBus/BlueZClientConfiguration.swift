import AsyncSignals
import DBus
/// Timeouts and names for `DBusBlueZClient`. Every duration is measured on the injected clock.
public struct BlueZClientConfiguration: Sendable {
    /// Ordinary calls (properties, discovery, RemoveDevice).
    public var callTimeout: Duration
    /// `Connect` / `ConnectProfile`: BlueZ's own page timeout is about 5 s, profile setup adds more.
    public var connectTimeout: Duration
    /// `Pair`: the speaker may need a moment in pairing mode.
    public var pairTimeout: Duration
    /// How often at most a device's RSSI-only changes reach subscribers.
    public var noisyChangeInterval: Duration
    /// Where our pairing agent is exported.
    public var agentPath: DBusObjectPath
    /// Whether to register the agent and ask to be the default agent.
    public var registersAgent: Bool
    /// Whether `start` returns before that first registration is done (it follows at once, on
    /// the same connection, so it reaches bluetoothd before any later `Pair`). Connecting a
    /// paired speaker needs no agent, so speakerd's start-up does not make its `Connect` wait for
    /// those two round trips; re-registration after a bluetoothd restart is always awaited.
    public var registersAgentInBackground: Bool

    public init(
        callTimeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(30),
        pairTimeout: Duration = .seconds(60), noisyChangeInterval: Duration = .milliseconds(500),
        agentPath: DBusObjectPath = "/org/speakerd/agent", registersAgent: Bool = true,
        registersAgentInBackground: Bool = false
    ) {
        self.callTimeout = callTimeout
        self.connectTimeout = connectTimeout
        self.pairTimeout = pairTimeout
        self.noisyChangeInterval = noisyChangeInterval
        self.agentPath = agentPath
        self.registersAgent = registersAgent
        self.registersAgentInBackground = registersAgentInBackground
    }
}
