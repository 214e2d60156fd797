/// The filter passed to `Adapter1.SetDiscoveryFilter` for our own discovery session.
///
/// Why a filter: BlueZ merges filters of all clients, but with ours it at least runs a BR/EDR
/// inquiry (speakers are classic A2DP devices) and reports RSSI changes. BlueZ may still report
/// devices outside it (other clients' filters), so results are classified again on our side.
public struct DiscoveryFilter: Equatable, Sendable {
    public enum Transport: String, Sendable { case auto, bredr, le }

    public var transport: Transport
    public var uuids: [String]
    public var rssiThreshold: Int16?
    public var duplicateData: Bool

    public init(transport: Transport = .auto, uuids: [String] = [], rssiThreshold: Int16? = nil, duplicateData: Bool = false) {
        self.transport = transport
        self.uuids = uuids
        self.rssiThreshold = rssiThreshold
        self.duplicateData = duplicateData
    }

    /// Classic Bluetooth, A2DP sinks only: BlueZ then leaves out phones and speakers that do not
    /// list their services in the inquiry response.
    public static let audioSinks = DiscoveryFilter(transport: .bredr, uuids: [BlueZUUID.a2dpSink])

    /// What speakerd's scans use: every classic Bluetooth device, so `composer-cli scan --all`
    /// can list the phones and computers nearby too (the classifier still decides what is offered).
    public static let classicDevices = DiscoveryFilter(transport: .bredr)
}
